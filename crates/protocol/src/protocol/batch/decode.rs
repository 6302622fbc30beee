//! Decoding of a `$batch` request body (Azure docs: "Performing entity group transactions") into a [`BatchBody`].
//!
//! Layout accepted (every variation below was seen in real client traffic):
//!
//! ```text
//! batch     = preamble *( delimiter part ) [ close-delimiter epilogue ]   ; per boundary
//! delimiter = "--" boundary [ "--" ] *( SP / HTAB ) line-break            ; at line start
//! line-break = CRLF / LF
//! part      = mime-headers blank-line content     ; content ends at the line break before
//!                                                 ; the next delimiter line (or at EOF)
//! batch part     = change set (multipart/mixed) | one application/http GET (query batch)
//! change set part = application/http: [ blank-lines ] request-line headers blank-line body
//! ```
//!
//! Leniency, on purpose: header names in any case; boundary parameter quoted or not and after
//! other parameters; a missing closing delimiter (Azure accepted a JS SDK body ending in
//! `--batch_<id>`); blank lines before the inner request line and before the body (the JS SDK
//! writes two); `Content-ID` among the MIME headers, the inner headers or nowhere; a header
//! block that runs to the end of a part without its blank line (a DELETE written as
//! `If-Match: *` CRLF then the delimiter).

use super::{BatchBody, BatchDecodeError, MultipartLevel, PartProblem, SubRequest};
use memchr::memchr;

/// Longest boundary accepted. RFC 2046 allows 70; SDK boundaries are about 46 bytes. Being a
/// little generous costs nothing, and the bound keeps delimiter checks cheap.
const MAX_BOUNDARY_LEN: usize = 200;

/// Longest piece of client input quoted in an error.
const MAX_QUOTE: usize = 100;

/// Decodes a `$batch` request body. `content_type` is the request's `Content-Type` header.
pub fn decode_batch(content_type: &str, body: &[u8]) -> Result<BatchBody, BatchDecodeError> {
    let media = MediaType::parse(content_type);
    if !media.is("multipart/mixed") {
        return Err(BatchDecodeError::NotMultipartMixed {
            content_type: quote(content_type),
        });
    }
    let boundary = media.boundary(MultipartLevel::Batch)?;
    let parts = split_parts(body, boundary.as_bytes(), MultipartLevel::Batch)?;
    if parts.is_empty() {
        return Err(BatchDecodeError::EmptyBatch);
    }

    // Classify every part first, so that the shape errors (two change sets, a query next to a
    // change set) win over errors inside one part.
    let mut changesets = Vec::new();
    let mut queries = Vec::new();
    for part in parts {
        let (headers, content_start) =
            parse_headers(part).map_err(|problem| BatchDecodeError::MalformedPart {
                index: None,
                problem,
            })?;
        let content = &part[content_start..];
        let ct = MediaType::parse(header(&headers, "Content-Type").unwrap_or(""));
        if ct.is("multipart/mixed") {
            changesets.push((ct, content));
        } else if ct.is("application/http") {
            queries.push((headers, content));
        } else {
            return Err(BatchDecodeError::NoChangeset {
                content_type: quote(header(&headers, "Content-Type").unwrap_or("")),
            });
        }
    }
    match (changesets.len(), queries.len()) {
        (0, 1) => {
            let (headers, content) = queries.swap_remove(0);
            let req = decode_http_part(&headers, content, None)?;
            if req.method != "GET" {
                return Err(BatchDecodeError::WriteOutsideChangeset { method: req.method });
            }
            Ok(BatchBody::Query(req))
        }
        (1, 0) => {
            let (ct, content) = changesets.swap_remove(0);
            decode_changeset(&ct, content).map(BatchBody::Changeset)
        }
        (c, _) if c > 1 => Err(BatchDecodeError::MultipleChangesets),
        (0, _) => Err(BatchDecodeError::MultipleQueries),
        _ => Err(BatchDecodeError::WritesMixedWithQuery),
    }
}

fn decode_changeset(
    media: &MediaType,
    content: &[u8],
) -> Result<Vec<SubRequest>, BatchDecodeError> {
    let boundary = media.boundary(MultipartLevel::Changeset)?;
    let parts = split_parts(content, boundary.as_bytes(), MultipartLevel::Changeset)?;
    if parts.is_empty() {
        return Err(BatchDecodeError::EmptyChangeset);
    }
    let mut requests = Vec::with_capacity(parts.len());
    for (index, part) in parts.into_iter().enumerate() {
        let malformed = |problem| BatchDecodeError::MalformedPart {
            index: Some(index),
            problem,
        };
        let (headers, content_start) = parse_headers(part).map_err(malformed)?;
        // A missing Content-Type is tolerated; anything else must be application/http.
        if let Some(ct) = header(&headers, "Content-Type") {
            if !MediaType::parse(ct).is("application/http") {
                return Err(malformed(PartProblem::NotApplicationHttp {
                    content_type: quote(ct),
                }));
            }
        }
        let req = decode_http_part(&headers, &part[content_start..], Some(index))?;
        match req.method.as_str() {
            "POST" | "PUT" | "MERGE" | "PATCH" | "DELETE" => requests.push(req),
            "GET" => return Err(BatchDecodeError::GetInChangeset { index }),
            _ => {
                return Err(BatchDecodeError::UnsupportedMethod {
                    index,
                    method: quote(&req.method),
                })
            }
        }
    }
    Ok(requests)
}

/// Decodes the embedded HTTP request of an `application/http` part whose MIME headers are
/// `mime` and whose content (after the MIME header block) is `content`.
fn decode_http_part(
    mime: &[(String, String)],
    content: &[u8],
    index: Option<usize>,
) -> Result<SubRequest, BatchDecodeError> {
    let malformed = |problem| BatchDecodeError::MalformedPart { index, problem };
    if let Some(cte) = header(mime, "Content-Transfer-Encoding") {
        let known = ["binary", "8bit", "7bit"];
        if !known.iter().any(|k| cte.eq_ignore_ascii_case(k)) {
            return Err(malformed(PartProblem::UnsupportedTransferEncoding {
                value: quote(cte),
            }));
        }
    }

    let content = skip_blank_lines(content);
    let Some(first) = next_line(content, 0) else {
        return Err(malformed(PartProblem::MissingRequestLine));
    };
    let (method, url) = parse_request_line(first.text(content)).ok_or_else(|| {
        BatchDecodeError::MalformedRequestLine {
            index,
            line: quote(&String::from_utf8_lossy(first.text(content))),
        }
    })?;

    let rest = &content[first.next..];
    let (headers, body_start) = parse_headers(rest).map_err(malformed)?;
    let body = extract_body(&rest[body_start..], header(&headers, "Content-Length"));

    let content_id = header(mime, "Content-ID")
        .or_else(|| header(&headers, "Content-ID"))
        .map(str::to_owned);
    Ok(SubRequest {
        method,
        url,
        headers,
        body: body.to_vec(),
        content_id,
    })
}

/// `<VERB> SP <URL> SP HTTP/<version>`. The URL is everything between the first and the last
/// space (trimmed), so a stray unencoded space inside it does not break the line.
fn parse_request_line(line: &[u8]) -> Option<(String, String)> {
    let line = std::str::from_utf8(line)
        .ok()?
        .trim_end_matches([' ', '\t']);
    let (method, rest) = line.split_once(' ')?;
    let (url, version) = rest.rsplit_once(' ')?;
    let url = url.trim_matches([' ', '\t']);
    let is_version = version.len() > 5 && version.as_bytes()[..5].eq_ignore_ascii_case(b"HTTP/");
    if method.is_empty() || !method.bytes().all(is_token_byte) || url.is_empty() || !is_version {
        return None;
    }
    Some((method.to_owned(), url.to_owned()))
}

/// The body region runs to the end of the part. Leading line breaks go (blank lines before a
/// body); with a valid `Content-Length` that leaves only whitespace after it, the body is cut
/// there.
fn extract_body<'a>(region: &'a [u8], content_length: Option<&str>) -> &'a [u8] {
    let region = skip_line_breaks(region);
    if let Some(n) = content_length.and_then(|v| v.trim().parse::<usize>().ok()) {
        if n <= region.len() && region[n..].iter().all(|b| b" \t\r\n".contains(b)) {
            return &region[..n];
        }
    }
    region
}

fn skip_line_breaks(mut s: &[u8]) -> &[u8] {
    loop {
        if let Some(rest) = s.strip_prefix(b"\r\n") {
            s = rest;
        } else if let Some(rest) = s.strip_prefix(b"\n") {
            s = rest;
        } else {
            return s;
        }
    }
}

/// Skips lines that are empty or only spaces/tabs.
fn skip_blank_lines(s: &[u8]) -> &[u8] {
    let mut pos = 0;
    while let Some(line) = next_line(s, pos) {
        if !line.text(s).iter().all(|b| *b == b' ' || *b == b'\t') {
            break;
        }
        pos = line.next;
    }
    &s[pos.min(s.len())..]
}

/// One line of a buffer: `start..end` is its text without the line break (a CR before the LF
/// is dropped), `next` the start of the following line.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
    next: usize,
}

impl Line {
    fn text<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        &buf[self.start..self.end]
    }
}

/// The line starting at `pos`, or `None` at the end of `buf`.
fn next_line(buf: &[u8], pos: usize) -> Option<Line> {
    if pos >= buf.len() {
        return None;
    }
    let (mut end, next) = match memchr(b'\n', &buf[pos..]) {
        Some(i) => (pos + i, pos + i + 1),
        None => (buf.len(), buf.len()),
    };
    if end > pos && buf[end - 1] == b'\r' {
        end -= 1;
    }
    Some(Line {
        start: pos,
        end,
        next,
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Delimiter {
    Open,
    Close,
}

/// Whether `line` is `--boundary` or `--boundary--`, allowing trailing spaces and tabs.
fn delimiter_kind(line: &[u8], boundary: &[u8]) -> Option<Delimiter> {
    let rest = line.strip_prefix(b"--")?.strip_prefix(boundary)?;
    let (kind, rest) = match rest.strip_prefix(b"--") {
        Some(r) => (Delimiter::Close, r),
        None => (Delimiter::Open, rest),
    };
    rest.iter()
        .all(|b| *b == b' ' || *b == b'\t')
        .then_some(kind)
}

/// Splits a multipart body into the contents of its parts (each still starting with its MIME
/// headers). A part's content stops before the line break that precedes the next delimiter
/// line. Without a closing delimiter the last part runs to the end of the body (minus one
/// trailing line break) and is dropped when it is only whitespace.
fn split_parts<'a>(
    body: &'a [u8],
    boundary: &[u8],
    level: MultipartLevel,
) -> Result<Vec<&'a [u8]>, BatchDecodeError> {
    let mut parts = Vec::new();
    let mut current: Option<usize> = None;
    let mut found = false;
    let mut pos = 0;
    while let Some(line) = next_line(body, pos) {
        if let Some(kind) = delimiter_kind(line.text(body), boundary) {
            found = true;
            if let Some(start) = current {
                parts.push(&body[start..content_end(body, start, line.start)]);
            }
            if kind == Delimiter::Close {
                return Ok(parts);
            }
            current = Some(line.next);
        }
        pos = line.next;
    }
    if !found {
        return Err(BatchDecodeError::BoundaryNotFound { level });
    }
    if let Some(start) = current {
        let rest = &body[start.min(body.len())..];
        if !rest.iter().all(u8::is_ascii_whitespace) {
            let rest = rest
                .strip_suffix(b"\r\n")
                .or_else(|| rest.strip_suffix(b"\n"))
                .unwrap_or(rest);
            parts.push(rest);
        }
    }
    Ok(parts)
}

/// End of a part's content that started at `start`, given that the next delimiter line starts
/// at `delimiter`: the line break before the delimiter belongs to the delimiter.
fn content_end(body: &[u8], start: usize, delimiter: usize) -> usize {
    let mut end = delimiter;
    if end > start && body[end - 1] == b'\n' {
        end -= 1;
        if end > start && body[end - 1] == b'\r' {
            end -= 1;
        }
    }
    end.max(start)
}

/// Parses a header block up to and including its blank line. Returns the headers (names and
/// values trimmed) and the offset just after the blank line, or `buf.len()` when the block
/// runs to the end. Folded continuation lines are joined with a space.
fn parse_headers(buf: &[u8]) -> Result<(Vec<(String, String)>, usize), PartProblem> {
    let mut headers: Vec<(String, String)> = Vec::new();
    let mut pos = 0;
    while let Some(line) = next_line(buf, pos) {
        pos = line.next;
        let text = line.text(buf);
        if text.is_empty() {
            return Ok((headers, pos));
        }
        let malformed = || PartProblem::MalformedHeader {
            line: quote(&String::from_utf8_lossy(text)),
        };
        let text = std::str::from_utf8(text).map_err(|_| malformed())?;
        if text.starts_with([' ', '\t']) {
            // obs-fold: continuation of the previous header value.
            let last = headers.last_mut().ok_or_else(malformed)?;
            let more = text.trim_matches([' ', '\t']);
            if !more.is_empty() {
                last.1.push(' ');
                last.1.push_str(more);
            }
            continue;
        }
        let (name, value) = text.split_once(':').ok_or_else(malformed)?;
        let name = name.trim_end_matches([' ', '\t']);
        if name.is_empty() || !name.bytes().all(is_token_byte) {
            return Err(malformed());
        }
        headers.push((name.to_owned(), value.trim_matches([' ', '\t']).to_owned()));
    }
    Ok((headers, buf.len()))
}

/// RFC 9110 `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// A parsed `type/subtype; name=value; ...` (type lower-cased, parameter names lower-cased,
/// quoted values unquoted).
#[derive(Debug)]
struct MediaType {
    essence: String,
    params: Vec<(String, String)>,
}

impl MediaType {
    fn parse(s: &str) -> MediaType {
        let mut pieces = split_params(s).into_iter();
        let essence = pieces
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let params = pieces
            .filter_map(|p| {
                let (name, value) = p.split_once('=')?;
                Some((name.trim().to_ascii_lowercase(), unquote(value.trim())))
            })
            .collect();
        MediaType { essence, params }
    }

    fn is(&self, essence: &str) -> bool {
        self.essence == essence
    }

    fn boundary(&self, level: MultipartLevel) -> Result<&str, BatchDecodeError> {
        let boundary = self
            .params
            .iter()
            .find(|(n, _)| n == "boundary")
            .map(|(_, v)| v.as_str())
            .ok_or(BatchDecodeError::MissingBoundary { level })?;
        let valid = !boundary.is_empty()
            && boundary.len() <= MAX_BOUNDARY_LEN
            && boundary.bytes().all(|b| (0x20..0x7f).contains(&b))
            && !boundary.ends_with(' ');
        if valid {
            Ok(boundary)
        } else {
            Err(BatchDecodeError::InvalidBoundary {
                level,
                boundary: quote(boundary),
            })
        }
    }
}

/// Splits on `;` outside double quotes.
fn split_params(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_quotes = false;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_quotes => escaped = true,
            '"' => in_quotes = !in_quotes,
            ';' if !in_quotes => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Removes surrounding double quotes and backslash escapes from a parameter value.
fn unquote(v: &str) -> String {
    match v.strip_prefix('"') {
        Some(inner) => {
            let inner = inner.strip_suffix('"').unwrap_or(inner);
            let mut out = String::with_capacity(inner.len());
            let mut chars = inner.chars();
            while let Some(c) = chars.next() {
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                } else {
                    out.push(c);
                }
            }
            out
        }
        None => v.to_owned(),
    }
}

/// Client text for an error message, shortened to [`MAX_QUOTE`] characters.
fn quote(s: &str) -> String {
    match s.char_indices().nth(MAX_QUOTE) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CT: &str = "multipart/mixed; boundary=batch_1";

    /// Builds a batch body from lines joined with CRLF.
    fn crlf(lines: &[&str]) -> Vec<u8> {
        lines.join("\r\n").into_bytes()
    }

    fn changeset_of(parts: &[&[&str]]) -> Vec<String> {
        let mut lines = vec![
            "--batch_1".to_owned(),
            "Content-Type: multipart/mixed; boundary=changeset_1".to_owned(),
            String::new(),
        ];
        for p in parts {
            lines.push("--changeset_1".to_owned());
            lines.push("Content-Type: application/http".to_owned());
            lines.push("Content-Transfer-Encoding: binary".to_owned());
            lines.push(String::new());
            lines.extend(p.iter().map(|s| (*s).to_owned()));
        }
        lines.push("--changeset_1--".to_owned());
        lines.push("--batch_1--".to_owned());
        lines.push(String::new());
        lines
    }

    fn decode_lines(lines: &[String]) -> Result<BatchBody, BatchDecodeError> {
        decode_batch(CT, lines.join("\r\n").as_bytes())
    }

    fn ops(body: Result<BatchBody, BatchDecodeError>) -> Vec<SubRequest> {
        match body {
            Ok(BatchBody::Changeset(ops)) => ops,
            other => panic!("expected a change set, got {other:?}"),
        }
    }

    const INSERT: &[&str] = &[
        "POST http://127.0.0.1:10002/devstoreaccount1/Blogs HTTP/1.1",
        "Content-Type: application/json",
        "Prefer: return-no-content",
        "",
        r#"{"PartitionKey":"p","RowKey":"1"}"#,
    ];
    const DELETE: &[&str] = &[
        "DELETE http://127.0.0.1:10002/devstoreaccount1/Blogs(PartitionKey='p',RowKey='1') HTTP/1.1",
        "If-Match: *",
        "",
    ];

    #[test]
    fn simple_changeset() {
        let ops = ops(decode_lines(&changeset_of(&[INSERT, DELETE])));
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[0].method, "POST");
        assert_eq!(ops[0].url, "http://127.0.0.1:10002/devstoreaccount1/Blogs");
        assert_eq!(
            ops[0].headers,
            vec![
                ("Content-Type".to_owned(), "application/json".to_owned()),
                ("Prefer".to_owned(), "return-no-content".to_owned()),
            ]
        );
        assert_eq!(ops[0].body, br#"{"PartitionKey":"p","RowKey":"1"}"#);
        assert_eq!(ops[0].content_id, None);
        assert_eq!(ops[1].method, "DELETE");
        assert_eq!(ops[1].header("if-match"), Some("*"));
        assert!(ops[1].body.is_empty());
    }

    #[test]
    fn bare_lf_line_endings() {
        let lines = changeset_of(&[INSERT, DELETE]);
        let body = lines.join("\n");
        let ops = ops(decode_batch(CT, body.as_bytes()));
        assert_eq!(ops.len(), 2);
        assert_eq!(ops[0].body, br#"{"PartitionKey":"p","RowKey":"1"}"#);
        assert_eq!(ops[1].header("If-Match"), Some("*"));
        assert!(ops[1].body.is_empty());
    }

    #[test]
    fn mixed_line_endings() {
        let mut body = changeset_of(&[INSERT]).join("\n");
        body = body.replacen("\n", "\r\n", 3);
        let ops = ops(decode_batch(CT, body.as_bytes()));
        assert_eq!(ops[0].body, br#"{"PartitionKey":"p","RowKey":"1"}"#);
    }

    #[test]
    fn header_names_any_case() {
        let body = crlf(&[
            "--batch_1",
            "CONTENT-TYPE: multipart/mixed; boundary=changeset_1",
            "",
            "--changeset_1",
            "content-transfer-encoding: BINARY",
            "content-type: Application/HTTP",
            "content-id: 7",
            "",
            "MERGE /devstoreaccount1/t(PartitionKey='a',RowKey='b') HTTP/1.1",
            "if-match: *",
            "Dataserviceversion: 3.0;",
            "",
            "{}",
            "--changeset_1--",
            "--batch_1--",
        ]);
        let ops = ops(decode_batch("Multipart/Mixed; Boundary=batch_1", &body));
        assert_eq!(ops[0].method, "MERGE");
        assert_eq!(ops[0].content_id.as_deref(), Some("7"));
        assert_eq!(ops[0].header("If-Match"), Some("*"));
        assert_eq!(ops[0].header("DataServiceVersion"), Some("3.0;"));
        assert_eq!(ops[0].body, b"{}");
    }

    #[test]
    fn boundary_parameter_variants() {
        let body = changeset_of(&[DELETE]).join("\r\n");
        for ct in [
            "multipart/mixed; boundary=batch_1",
            "multipart/mixed;boundary=batch_1",
            "multipart/mixed; boundary=\"batch_1\"",
            "multipart/mixed;charset=\"utf-8\";boundary=batch_1",
            "multipart/mixed; charset=utf-8; boundary=\"batch_1\"; foo=bar",
            "multipart/mixed; x=\"a;boundary=nope\"; boundary=batch_1",
            " multipart/mixed ; BOUNDARY = batch_1 ",
        ] {
            assert_eq!(ops(decode_batch(ct, body.as_bytes())).len(), 1, "{ct}");
        }
        // The change set boundary, quoted and after another parameter.
        let body = body.replace(
            "boundary=changeset_1",
            "charset=\"utf-8\";boundary=\"changeset_1\"",
        );
        assert_eq!(ops(decode_batch(CT, body.as_bytes())).len(), 1);
    }

    #[test]
    fn boundary_that_is_a_prefix_of_another_line() {
        // "--batch_1x" is not a delimiter for "batch_1".
        let body = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed; boundary=changeset_1",
            "",
            "--changeset_1",
            "Content-Type: application/http",
            "",
            "POST /t HTTP/1.1",
            "",
            "--batch_1x",
            "--changeset_1x",
            "--changeset_1--",
            "--batch_1--",
        ]);
        let ops = ops(decode_batch(CT, &body));
        assert_eq!(ops.len(), 1);
        assert_eq!(ops[0].body, b"--batch_1x\r\n--changeset_1x");
    }

    #[test]
    fn content_id_sources() {
        // Among the part headers (Python, Go), the inner headers (legacy), or absent (JS).
        let part_header = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed; boundary=cs",
            "",
            "--cs",
            "Content-Type: application/http",
            "Content-ID: 1",
            "",
            "DELETE /t(PartitionKey='a',RowKey='b') HTTP/1.1",
            "Content-ID: 99",
            "",
            "--cs",
            "Content-Type: application/http",
            "",
            "DELETE /t(PartitionKey='a',RowKey='c') HTTP/1.1",
            "content-id: 2",
            "",
            "--cs",
            "Content-Type: application/http",
            "",
            "DELETE /t(PartitionKey='a',RowKey='d') HTTP/1.1",
            "",
            "--cs--",
            "--batch_1--",
        ]);
        let ops = ops(decode_batch(CT, &part_header));
        let ids: Vec<_> = ops.iter().map(|o| o.content_id.as_deref()).collect();
        assert_eq!(ids, [Some("1"), Some("2"), None]);
        // The inner header stays among the headers.
        assert_eq!(ops[0].header("Content-ID"), Some("99"));
    }

    #[test]
    fn two_blank_lines_before_body() {
        let ops = ops(decode_lines(&changeset_of(&[&[
            "POST /t HTTP/1.1",
            "Content-Type: application/json",
            "",
            "",
            "{\"a\":1}",
        ]])));
        assert_eq!(ops[0].body, b"{\"a\":1}");
    }

    #[test]
    fn blank_lines_before_request_line() {
        let ops = ops(decode_lines(&changeset_of(&[&[
            "",
            "  ",
            "DELETE /t(PartitionKey='a',RowKey='b') HTTP/1.1",
            "",
        ]])));
        assert_eq!(ops[0].method, "DELETE");
    }

    #[test]
    fn body_keeps_inner_line_breaks_and_trailing_text() {
        let ops = ops(decode_lines(&changeset_of(&[&[
            "PUT /t(PartitionKey='a',RowKey='b') HTTP/1.1",
            "",
            "{",
            "  \"a\": 1",
            "}",
        ]])));
        assert_eq!(ops[0].body, b"{\r\n  \"a\": 1\r\n}");
    }

    #[test]
    fn content_length_trims_trailing_whitespace_only() {
        let ops = ops(decode_lines(&changeset_of(&[
            &[
                "PUT /t(PartitionKey='a',RowKey='b') HTTP/1.1",
                "Content-Length: 2",
                "",
                "{}",
                "",
                "",
            ],
            // A wrong (too large) Content-Length is ignored.
            &[
                "PUT /t(PartitionKey='a',RowKey='c') HTTP/1.1",
                "Content-Length: 500",
                "",
                "{}",
            ],
            // A too small one that would cut real content is ignored too.
            &[
                "PUT /t(PartitionKey='a',RowKey='d') HTTP/1.1",
                "Content-Length: 1",
                "",
                "{}",
            ],
            // Not a number.
            &[
                "PUT /t(PartitionKey='a',RowKey='e') HTTP/1.1",
                "Content-Length: lots",
                "",
                "{} ",
            ],
        ])));
        assert_eq!(ops[0].body, b"{}");
        assert_eq!(ops[1].body, b"{}");
        assert_eq!(ops[2].body, b"{}");
        assert_eq!(ops[3].body, b"{} ");
    }

    #[test]
    fn delete_without_blank_line_before_delimiter() {
        // Headers run straight into the delimiter's line break.
        let body = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed; boundary=cs",
            "",
            "--cs",
            "Content-Type: application/http",
            "",
            "DELETE /t(PartitionKey='a',RowKey='b') HTTP/1.1",
            "If-Match: *",
            "--cs--",
            "--batch_1--",
        ]);
        let ops = ops(decode_batch(CT, &body));
        assert_eq!(ops[0].headers, [("If-Match".to_owned(), "*".to_owned())]);
        assert!(ops[0].body.is_empty());
    }

    #[test]
    fn merge_without_body() {
        let ops = ops(decode_lines(&changeset_of(&[&[
            "MERGE /t(PartitionKey='a',RowKey='b') HTTP/1.1",
            "If-Match: *",
            "",
        ]])));
        assert_eq!(ops[0].method, "MERGE");
        assert!(ops[0].body.is_empty());
    }

    #[test]
    fn lenient_closing_delimiters() {
        let base = changeset_of(&[INSERT, DELETE]).join("\r\n");
        let variants = [
            // final "--" of the batch missing (Azure accepted this from the JS SDK)
            base.replace("--batch_1--", "--batch_1"),
            // no batch close at all
            base.replace("--batch_1--\r\n", ""),
            // nothing closed
            base.replace("--changeset_1--\r\n--batch_1--\r\n", ""),
            // change set not closed, batch closed
            base.replace("--changeset_1--\r\n", ""),
            // trailing whitespace on delimiter lines
            base.replace("--changeset_1\r\n", "--changeset_1 \t\r\n")
                .replace("--batch_1--", "--batch_1--  "),
            // no final line break, and an epilogue
            base.trim_end().to_owned(),
            format!("{base}epilogue text\r\n--batch_1\r\n"),
            // a preamble
            format!("preamble\r\n\r\n{base}"),
        ];
        for v in &variants {
            let ops = ops(decode_batch(CT, v.as_bytes()));
            assert_eq!(ops.len(), 2, "{v:?}");
            assert_eq!(
                ops[0].body, br#"{"PartitionKey":"p","RowKey":"1"}"#,
                "{v:?}"
            );
            assert!(ops[1].body.is_empty(), "{v:?}");
        }
    }

    #[test]
    fn relative_urls_and_query_strings() {
        let ops = ops(decode_lines(&changeset_of(&[
            &[
                "PUT /devstoreaccount1/t(PartitionKey='a',RowKey='b')?$format=application%2Fjson HTTP/1.1",
                "",
            ],
            &["PATCH t(PartitionKey=%27a%27,RowKey=%27c%27) HTTP/1.1", ""],
        ])));
        assert_eq!(
            ops[0].path_and_query(),
            (
                "/devstoreaccount1/t(PartitionKey='a',RowKey='b')",
                Some("$format=application%2Fjson")
            )
        );
        assert_eq!(ops[1].url, "t(PartitionKey=%27a%27,RowKey=%27c%27)");
    }

    #[test]
    fn request_line_variants() {
        assert_eq!(
            parse_request_line(b"POST http://h/t HTTP/1.1"),
            Some(("POST".into(), "http://h/t".into()))
        );
        assert_eq!(
            parse_request_line(b"POST  /t(PartitionKey='a b')  http/1.0 "),
            Some(("POST".into(), "/t(PartitionKey='a b')".into()))
        );
        for bad in [
            &b""[..],
            b"POST",
            b"POST /t",
            b"POST /t HTTP",
            b"POST HTTP/1.1",
            b" /t HTTP/1.1",
            b"PO(ST /t HTTP/1.1",
            b"POST  HTTP/1.1",
            b"POST /t \xff HTTP/1.1",
        ] {
            assert_eq!(
                parse_request_line(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn query_batch() {
        let body = crlf(&[
            "--batch_1",
            "Content-Type: application/http",
            "Content-Transfer-Encoding: binary",
            "",
            "GET https://acct.table.core.windows.net/t(PartitionKey=%27a%27,RowKey=%27b%27) HTTP/1.1",
            "content-id: 0",
            "accept: application/json;odata=minimalmetadata",
            "",
            "--batch_1--",
        ]);
        let Ok(BatchBody::Query(q)) = decode_batch(CT, &body) else {
            panic!("expected a query");
        };
        assert_eq!(q.method, "GET");
        assert_eq!(
            q.path_and_query(),
            ("/t(PartitionKey=%27a%27,RowKey=%27b%27)", None)
        );
        assert_eq!(q.content_id.as_deref(), Some("0"));
        assert_eq!(
            q.header("Accept"),
            Some("application/json;odata=minimalmetadata")
        );
        assert!(q.body.is_empty());
    }

    fn err(ct: &str, body: &[u8]) -> BatchDecodeError {
        match decode_batch(ct, body) {
            Err(e) => e,
            Ok(b) => panic!("expected an error, got {b:?}"),
        }
    }

    #[test]
    fn error_not_multipart() {
        assert_eq!(
            err("application/json", b""),
            BatchDecodeError::NotMultipartMixed {
                content_type: "application/json".into()
            }
        );
        assert!(matches!(
            err("", b""),
            BatchDecodeError::NotMultipartMixed { .. }
        ));
    }

    #[test]
    fn error_boundaries() {
        use MultipartLevel::*;
        assert_eq!(
            err("multipart/mixed", b""),
            BatchDecodeError::MissingBoundary { level: Batch }
        );
        assert_eq!(
            err("multipart/mixed; boundary=\"\"", b""),
            BatchDecodeError::InvalidBoundary {
                level: Batch,
                boundary: String::new()
            }
        );
        assert!(matches!(
            err("multipart/mixed; boundary=\"a\u{e9}\"", b""),
            BatchDecodeError::InvalidBoundary { level: Batch, .. }
        ));
        let long = format!("multipart/mixed; boundary={}", "x".repeat(201));
        assert!(matches!(
            err(&long, b""),
            BatchDecodeError::InvalidBoundary { level: Batch, .. }
        ));
        assert_eq!(
            err(CT, b"no delimiter here\r\n"),
            BatchDecodeError::BoundaryNotFound { level: Batch }
        );
        let no_cs_boundary = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed",
            "",
            "--changeset_1--",
            "--batch_1--",
        ]);
        assert_eq!(
            err(CT, &no_cs_boundary),
            BatchDecodeError::MissingBoundary { level: Changeset }
        );
        let wrong_cs_boundary = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed; boundary=other",
            "",
            "--changeset_1--",
            "--batch_1--",
        ]);
        assert_eq!(
            err(CT, &wrong_cs_boundary),
            BatchDecodeError::BoundaryNotFound { level: Changeset }
        );
    }

    #[test]
    fn error_empty_batch_and_changeset() {
        assert_eq!(err(CT, b"--batch_1--\r\n"), BatchDecodeError::EmptyBatch);
        assert_eq!(
            err(CT, b"--batch_1\r\n\r\n  \r\n--batch_1--"),
            BatchDecodeError::NoChangeset {
                content_type: String::new()
            }
        );
        assert_eq!(err(CT, b"--batch_1\r\n"), BatchDecodeError::EmptyBatch);
        let empty_cs = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed; boundary=cs",
            "",
            "--cs--",
            "--batch_1--",
        ]);
        assert_eq!(err(CT, &empty_cs), BatchDecodeError::EmptyChangeset);
    }

    #[test]
    fn error_part_not_a_changeset() {
        let body = crlf(&[
            "--batch_1",
            "Content-Type: text/plain",
            "",
            "hi",
            "--batch_1--",
        ]);
        assert_eq!(
            err(CT, &body),
            BatchDecodeError::NoChangeset {
                content_type: "text/plain".into()
            }
        );
    }

    #[test]
    fn error_multiple_changesets() {
        let one = changeset_of(&[DELETE]);
        let mut two = one[..one.len() - 2].to_vec();
        two.extend(one[..one.len() - 2].iter().cloned());
        two.push("--batch_1--".into());
        assert_eq!(
            decode_lines(&two),
            Err(BatchDecodeError::MultipleChangesets)
        );
    }

    const GET_PART: &[&str] = &[
        "--batch_1",
        "Content-Type: application/http",
        "",
        "GET /t(PartitionKey='a',RowKey='b') HTTP/1.1",
        "",
    ];

    #[test]
    fn error_query_mixed_with_writes() {
        let cs = changeset_of(&[DELETE]);
        let mut lines: Vec<String> = GET_PART.iter().map(|s| (*s).to_owned()).collect();
        lines.extend(cs);
        assert_eq!(
            decode_lines(&lines),
            Err(BatchDecodeError::WritesMixedWithQuery)
        );
    }

    #[test]
    fn error_multiple_queries() {
        let mut lines: Vec<String> = GET_PART.iter().map(|s| (*s).to_owned()).collect();
        lines.extend(GET_PART.iter().map(|s| (*s).to_owned()));
        lines.push("--batch_1--".into());
        assert_eq!(decode_lines(&lines), Err(BatchDecodeError::MultipleQueries));
    }

    #[test]
    fn error_write_outside_changeset() {
        let body = crlf(&[
            "--batch_1",
            "Content-Type: application/http",
            "",
            "POST /t HTTP/1.1",
            "",
            "{}",
            "--batch_1--",
        ]);
        assert_eq!(
            err(CT, &body),
            BatchDecodeError::WriteOutsideChangeset {
                method: "POST".into()
            }
        );
    }

    #[test]
    fn error_get_in_changeset() {
        let lines = changeset_of(&[
            DELETE,
            &["GET /t(PartitionKey='a',RowKey='b') HTTP/1.1", ""],
        ]);
        assert_eq!(
            decode_lines(&lines),
            Err(BatchDecodeError::GetInChangeset { index: 1 })
        );
    }

    #[test]
    fn error_unsupported_method() {
        for m in ["HEAD", "OPTIONS", "post", "TRACE"] {
            let line = format!("{m} /t HTTP/1.1");
            let lines = changeset_of(&[&[&line, ""]]);
            assert_eq!(
                decode_lines(&lines),
                Err(BatchDecodeError::UnsupportedMethod {
                    index: 0,
                    method: m.into()
                })
            );
        }
    }

    #[test]
    fn error_malformed_request_line() {
        let lines = changeset_of(&[DELETE, &["DELETE /t", ""]]);
        assert_eq!(
            decode_lines(&lines),
            Err(BatchDecodeError::MalformedRequestLine {
                index: Some(1),
                line: "DELETE /t".into()
            })
        );
        let body = crlf(&[
            "--batch_1",
            "Content-Type: application/http",
            "",
            "GET",
            "--batch_1--",
        ]);
        assert_eq!(
            err(CT, &body),
            BatchDecodeError::MalformedRequestLine {
                index: None,
                line: "GET".into()
            }
        );
    }

    #[test]
    fn error_malformed_parts() {
        // Missing blank line between MIME headers and request line.
        let body = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed; boundary=cs",
            "",
            "--cs",
            "Content-Type: application/http",
            "POST http://h/t HTTP/1.1",
            "",
            "--cs--",
            "--batch_1--",
        ]);
        assert_eq!(
            err(CT, &body),
            BatchDecodeError::MalformedPart {
                index: Some(0),
                problem: PartProblem::MalformedHeader {
                    line: "POST http://h/t HTTP/1.1".into()
                }
            }
        );
        // Only MIME headers, no request.
        let lines = changeset_of(&[&[]]);
        assert_eq!(
            decode_lines(&lines),
            Err(BatchDecodeError::MalformedPart {
                index: Some(0),
                problem: PartProblem::MissingRequestLine
            })
        );
        // A nested multipart inside the change set.
        let body = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed; boundary=cs",
            "",
            "--cs",
            "Content-Type: multipart/mixed; boundary=x",
            "",
            "--x--",
            "--cs--",
            "--batch_1--",
        ]);
        assert!(matches!(
            err(CT, &body),
            BatchDecodeError::MalformedPart {
                index: Some(0),
                problem: PartProblem::NotApplicationHttp { .. }
            }
        ));
        // base64 transfer encoding.
        let body = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed; boundary=cs",
            "",
            "--cs",
            "Content-Type: application/http",
            "Content-Transfer-Encoding: base64",
            "",
            "REVMRVRFIC90IEhUVFAvMS4x",
            "--cs--",
            "--batch_1--",
        ]);
        assert_eq!(
            err(CT, &body),
            BatchDecodeError::MalformedPart {
                index: Some(0),
                problem: PartProblem::UnsupportedTransferEncoding {
                    value: "base64".into()
                }
            }
        );
        // Non-UTF-8 header.
        let mut body = crlf(&[
            "--batch_1",
            "Content-Type: multipart/mixed; boundary=cs",
            "",
            "--cs",
            "Content-Type: application/http",
            "",
            "DELETE /t HTTP/1.1",
            "If-Match: \u{1}",
            "",
            "--cs--",
            "--batch_1--",
        ]);
        let at = body.iter().position(|b| *b == 1).expect("marker byte");
        body[at] = 0xff;
        assert!(matches!(
            err(CT, &body),
            BatchDecodeError::MalformedPart {
                index: Some(0),
                problem: PartProblem::MalformedHeader { .. }
            }
        ));
        // A continuation line with nothing to continue.
        let body = crlf(&["--batch_1", " folded", "", "--batch_1--"]);
        assert!(matches!(
            err(CT, &body),
            BatchDecodeError::MalformedPart {
                index: None,
                problem: PartProblem::MalformedHeader { .. }
            }
        ));
    }

    #[test]
    fn folded_header_lines_are_joined() {
        let (headers, at) =
            parse_headers(b"A: 1\r\n  more\r\n\tand more\r\nB:2\r\n\r\nbody").expect("headers");
        assert_eq!(
            headers,
            [
                ("A".to_owned(), "1 more and more".to_owned()),
                ("B".to_owned(), "2".to_owned())
            ]
        );
        assert_eq!(at, 32);
    }

    #[test]
    fn quoted_error_text_is_shortened() {
        let long = format!("application/{}", "x".repeat(500));
        let BatchDecodeError::NotMultipartMixed { content_type } = err(&long, b"") else {
            panic!("wrong error");
        };
        assert_eq!(content_type.chars().count(), MAX_QUOTE + 1);
    }

    #[test]
    fn split_parts_edges() {
        let b = b"x";
        assert_eq!(
            split_parts(b"--x\r\n--x--", b, MultipartLevel::Batch).expect("split"),
            [&b""[..]]
        );
        assert_eq!(
            split_parts(b"--x\n\n--x--\n", b, MultipartLevel::Batch).expect("split"),
            [&b""[..]]
        );
        assert_eq!(
            split_parts(b"--x\r\na\r\n\r\n--x\r\nb", b, MultipartLevel::Batch).expect("split"),
            [&b"a\r\n"[..], &b"b"[..]]
        );
        assert!(split_parts(b"", b, MultipartLevel::Batch).is_err());
        assert!(split_parts(b"-x", b, MultipartLevel::Batch).is_err());
    }
}
