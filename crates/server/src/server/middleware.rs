//! The request-log layer: one `tablestore::request` line per request (method, path, status,
//! latency, request id, auth outcome, the `x-ms-error-code` of a failed request and, for a
//! refusal, its cause; the string-to-sign of a signature mismatch at debug level) unless
//! `--silent`, and with `--debug FILE` a `tablestore::debug` trace of each request and
//! response (headers and bodies, secrets redacted). It wraps the whole application, so the
//! latency includes everything.
//!
//! It hands every finished request to `crate::insight` (a queue push, never a wait) and
//! adds the query class and examined/returned counts to the access line of a query.
//!
//! Only observes: it never changes a request or a response (it re-assembles a body it
//! buffered for the debug trace byte for byte).

use std::fmt::Write as _;
use std::time::Instant;

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;

use super::context::AnsweredError;
use super::health::HEALTH_PATH;
use super::insight::Charged;
use super::AppState;
use crate::insight::{Event, Observation, QueryClass, Report};
use crate::model::limits::MAX_REQUEST_BODY;
use crate::protocol::error::LogCause;
use crate::protocol::headers::X_MS_REQUEST_ID;

/// The log target of the per-request access line.
pub(crate) const REQUEST_LOG_TARGET: &str = "tablestore::request";
/// The log target of the `--debug` request and response trace.
pub(crate) const DEBUG_LOG_TARGET: &str = "tablestore::debug";

/// How a request was authenticated, for the access log's `auth` field (for example
/// `SharedKey`, `SAS`, `anonymous`, or `denied`). The authentication layer puts it in the
/// *response* extensions; the log shows `-` when it is absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AuthOutcome(pub &'static str);

/// Bodies longer than this are cut in the debug trace.
const DEBUG_BODY_LIMIT: usize = 4096;

/// The layer (see `server::App`): runs `next` on the request, then reports the answer to
/// insight and writes the access line. It copies nothing of the request for the line: the
/// method and the URI are reference counts, the request id is read off the answer.
pub(crate) async fn request_log<F, Fut>(state: &AppState, request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    let start = Instant::now();
    let method = request.method().clone();
    let uri = request.uri().clone();
    // The `--debug` trace's futures run boxed, off the usual request's future.
    let (request, request_trace) = if state.config.debug.is_some() {
        let (request, trace) = Box::pin(capture_request(request)).await;
        (request, Some(trace))
    } else {
        (request, None)
    };

    let mut response = next(request).await;

    let latency = start.elapsed();
    let query = report_to_insight(state, &mut response, latency);
    let response = match request_trace {
        Some(trace) => {
            let request_id = header_or_dash(&response, X_MS_REQUEST_ID).to_string();
            Box::pin(trace_exchange(trace, response, &request_id)).await
        }
        None => response,
    };
    if !state.config.silent {
        let line = LogLine {
            method: &method,
            path: uri.path(),
            latency_ms: latency.as_secs_f64() * 1000.0,
            request_id: header_or_dash(&response, X_MS_REQUEST_ID),
            query,
        };
        log_request(&line, &response);
    }
    response
}

/// The `--debug` trace of one exchange: the request as captured, then the response.
async fn trace_exchange(request_trace: String, response: Response, request_id: &str) -> Response {
    tracing::debug!(target: DEBUG_LOG_TARGET, request_id = %request_id, "request {request_trace}");
    let (response, trace) = capture_response(response).await;
    tracing::debug!(target: DEBUG_LOG_TARGET, request_id = %request_id, "response {trace}");
    response
}

/// A response header's text, or `-` (as the access log shows a missing value).
fn header_or_dash<'a>(response: &'a Response, name: &str) -> &'a str {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-")
}

/// A query's class, and the entities it examined and returned.
type QuerySummary = (QueryClass, u64, u64);

/// Hands the request's outcome (the executor's observation, the operation realism charged
/// it as) to insight; says what a query examined, for the access log.
fn report_to_insight(
    state: &AppState,
    response: &mut Response,
    latency: std::time::Duration,
) -> Option<QuerySummary> {
    let observation = response.extensions_mut().remove::<Observation>();
    let query = match &observation {
        Some(Observation {
            event:
                Event::Query {
                    class,
                    examined,
                    returned,
                    ..
                },
            ..
        }) => Some((*class, *examined, *returned)),
        _ => None,
    };
    // The last reader of the mark (CORS reads it inside this layer).
    let charged = response.extensions_mut().remove::<Charged>();
    state.insight.report(Report {
        operation: charged.as_ref().map_or("Other", |c| c.operation),
        status: response.status().as_u16(),
        latency,
        account: charged.and_then(|c| c.account),
        observation,
    });
    query
}

/// What the access log says of a request besides what its response says.
struct LogLine<'a> {
    method: &'a axum::http::Method,
    path: &'a str,
    latency_ms: f64,
    request_id: &'a str,
    query: Option<QuerySummary>,
}

/// The access-log line: status, latency, request id, how the caller authenticated and, for
/// a failure, Azure's error code; for a query, its class and what it examined.
fn log_request(line: &LogLine<'_>, response: &Response) {
    let LogLine {
        method,
        path,
        request_id,
        ..
    } = line;
    let status = response.status().as_u16();
    let auth = response
        .extensions()
        .get::<AuthOutcome>()
        .map_or("-", |a| a.0);
    // The Azure error code of a failed request, so the log says why, not only that.
    let error = response
        .extensions()
        .get::<AnsweredError>()
        .map_or("-", |e| e.0);
    let latency_ms = (line.latency_ms * 1000.0).round() / 1000.0;
    // Readiness probes run every few seconds in containers: keep them out of the info log.
    if let Some(cause) = response.extensions().get::<LogCause>() {
        // A refusal says why (the wire keeps Azure's answer); what only a debug log should
        // show, such as the string-to-sign the server computed, goes on a line of its own.
        let cause_text = &cause.text;
        tracing::info!(target: REQUEST_LOG_TARGET, %method, %path, status, latency_ms, %request_id, %auth, %error, cause = %cause_text, "request");
        if let Some(detail) = &cause.debug {
            tracing::debug!(target: REQUEST_LOG_TARGET, %request_id, ?detail, "refusal detail");
        }
    } else if let Some((class, examined, returned)) = line.query {
        tracing::info!(target: REQUEST_LOG_TARGET, %method, %path, status, latency_ms, %request_id, %auth, %error, %class, examined, returned, "request");
    } else if *path == HEALTH_PATH {
        tracing::debug!(target: REQUEST_LOG_TARGET, %method, %path, status, latency_ms, %request_id, %auth, %error, "request");
    } else {
        tracing::info!(target: REQUEST_LOG_TARGET, %method, %path, status, latency_ms, %request_id, %auth, %error, "request");
    }
}

/// Buffers the request body (when its declared length is within the request limit, so the
/// handler still sees an over-long body and answers `RequestBodyTooLarge`) and describes the
/// request.
async fn capture_request(request: Request) -> (Request, String) {
    let (parts, body) = request.into_parts();
    let mut trace = format!(
        "{} {}",
        parts.method,
        redact_query(
            parts
                .uri
                .path_and_query()
                .map(|p| p.as_str())
                .unwrap_or("/")
        )
    );
    write_headers(&mut trace, &parts.headers);
    let body = capture_body(&parts.headers, body, &mut trace).await;
    (Request::from_parts(parts, body), trace)
}

/// The request body for the trace: read and written into `trace` when its declared length is
/// within the request limit, else left unread (the trace says why).
async fn capture_body(headers: &HeaderMap, body: Body, trace: &mut String) -> Body {
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    match declared {
        Some(len) if len <= MAX_REQUEST_BODY => match to_bytes(body, MAX_REQUEST_BODY).await {
            Ok(bytes) => {
                write_body(trace, &bytes);
                Body::from(bytes)
            }
            Err(e) => {
                let _ = write!(trace, " body=<unreadable: {e}>");
                Body::empty()
            }
        },
        Some(_) => {
            trace.push_str(" body=<not captured: larger than the request limit>");
            body
        }
        None if headers.contains_key(axum::http::header::TRANSFER_ENCODING) => {
            trace.push_str(" body=<not captured: no Content-Length>");
            body
        }
        None => body,
    }
}

/// Buffers the response body and describes the response.
async fn capture_response(response: Response) -> (Response, String) {
    let (parts, body) = response.into_parts();
    let mut trace = format!("{}", parts.status.as_u16());
    write_headers(&mut trace, &parts.headers);
    let body = match to_bytes(body, usize::MAX).await {
        Ok(bytes) => {
            write_body(&mut trace, &bytes);
            Body::from(bytes)
        }
        Err(e) => {
            let _ = write!(trace, " body=<unreadable: {e}>");
            Body::empty()
        }
    };
    (Response::from_parts(parts, body), trace)
}

fn write_headers(out: &mut String, headers: &HeaderMap) {
    out.push_str(" headers={");
    for (i, (name, value)) in headers.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let value = value.to_str().unwrap_or("<binary>");
        let shown = if name == axum::http::header::AUTHORIZATION {
            redact_authorization(value)
        } else {
            value.to_string()
        };
        let _ = write!(out, "{name}: {shown}");
    }
    out.push('}');
}

fn write_body(out: &mut String, bytes: &Bytes) {
    let _ = write!(out, " body_bytes={}", bytes.len());
    if bytes.is_empty() {
        return;
    }
    let shown = &bytes[..bytes.len().min(DEBUG_BODY_LIMIT)];
    let text = String::from_utf8_lossy(shown);
    let _ = write!(out, " body={text:?}");
    if bytes.len() > DEBUG_BODY_LIMIT {
        out.push('…');
    }
}

/// `SharedKey account:signature` → `SharedKey account:<redacted>`; anything else (bearer
/// tokens) is redacted after the scheme.
fn redact_authorization(value: &str) -> String {
    match value.split_once(' ') {
        Some((scheme, credential)) => match credential.split_once(':') {
            Some((account, _)) if scheme.starts_with("SharedKey") => {
                format!("{scheme} {account}:<redacted>")
            }
            _ => format!("{scheme} <redacted>"),
        },
        None => "<redacted>".to_string(),
    }
}

/// Replaces the value of a SAS signature (`sig=`) in a path and query.
fn redact_query(path_and_query: &str) -> String {
    let Some((path, query)) = path_and_query.split_once('?') else {
        return path_and_query.to_string();
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if k.eq_ignore_ascii_case("sig") => format!("{k}=<redacted>"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{path}?{}", parts.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(
            redact_authorization("SharedKey devstoreaccount1:abc+/="),
            "SharedKey devstoreaccount1:<redacted>"
        );
        assert_eq!(
            redact_authorization("SharedKeyLite a:x"),
            "SharedKeyLite a:<redacted>"
        );
        assert_eq!(redact_authorization("Bearer eyJ.x.y"), "Bearer <redacted>");
        assert_eq!(redact_authorization("token"), "<redacted>");
        assert_eq!(
            redact_query("/a/t()?sv=2019-02-02&sig=abc%2B&se=x"),
            "/a/t()?sv=2019-02-02&sig=<redacted>&se=x"
        );
        assert_eq!(redact_query("/a/Tables"), "/a/Tables");
    }

    #[test]
    fn bodies_are_cut() {
        let mut s = String::new();
        write_body(&mut s, &Bytes::from(vec![b'a'; DEBUG_BODY_LIMIT + 10]));
        assert!(s.starts_with(&format!(" body_bytes={}", DEBUG_BODY_LIMIT + 10)));
        assert!(s.ends_with('…'));
    }
}
