//! The application called in process, with no socket: the embedded fixture's in-process mode
//! (`tablestore::testing::InProcessServer`), which the wire tests that are not about
//! connections use. A request goes to [`App::answer`] as the connection loop hands it one
//! over plain HTTP, and the answer comes back whole, framed as the HTTP/1 connection would
//! frame it on the wire (what a client then sees).

use std::net::SocketAddr;

use axum::body::Body;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt as _;

use super::{App, AppState};

/// A request for [`InProcess::answer`], its body whole.
pub type InProcessRequest = Request<Bytes>;

/// An answer of [`InProcess::answer`], its body whole.
pub type InProcessResponse = Response<Bytes>;

/// The whole application, answering requests in this process.
#[doc(hidden)]
pub struct InProcess {
    app: App,
}

impl InProcess {
    pub fn new(state: AppState) -> InProcess {
        InProcess {
            app: App::new(state),
        }
    }

    /// Answers `request` from `peer` as one over a plain-HTTP connection is answered, and
    /// reads the whole answer. There is no connection to drop, so a fault that drops one
    /// answers 500 (`Connection: close`) instead.
    pub async fn answer(&self, request: InProcessRequest, peer: SocketAddr) -> InProcessResponse {
        let method = request.method().clone();
        let response = self.app.answer(request.map(Body::from), peer, None).await;
        let (mut parts, body) = response.into_parts();
        let exact = axum::body::HttpBody::size_hint(&body).exact();
        let body = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            // A streamed answer that fails midway ends its connection on the wire: the client
            // sees a truncated body, here an empty one.
            Err(_) => Bytes::new(),
        };
        frame(&mut parts.headers, parts.status, &method, exact);
        let body = match carries_body(parts.status, &method) {
            true => body,
            false => Bytes::new(),
        };
        Response::from_parts(parts, body)
    }
}

/// The framing headers hyper's HTTP/1 server writes: no length on a 1xx, 204 or 304 answer
/// and no chunks on those or a HEAD answer; otherwise the application's `Content-Length` or
/// `Transfer-Encoding`, else the body's exact length (none for an empty HEAD answer), else
/// chunked.
fn frame(headers: &mut http::HeaderMap, status: StatusCode, method: &Method, exact: Option<u64>) {
    let no_length = status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    let no_chunks = no_length || method == Method::HEAD;
    if no_length {
        headers.remove(CONTENT_LENGTH);
    }
    if no_chunks {
        headers.remove(TRANSFER_ENCODING);
    }
    if no_length || headers.contains_key(CONTENT_LENGTH) || headers.contains_key(TRANSFER_ENCODING)
    {
        return;
    }
    match exact {
        Some(0) if method == Method::HEAD => {}
        Some(len) => {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
        }
        None if !no_chunks => {
            headers.insert(TRANSFER_ENCODING, HeaderValue::from_static("chunked"));
        }
        None => {}
    }
}

/// Whether the body reaches the client: not for HEAD, 1xx, 204 or 304.
fn carries_body(status: StatusCode, method: &Method) -> bool {
    method != Method::HEAD
        && !status.is_informational()
        && status != StatusCode::NO_CONTENT
        && status != StatusCode::NOT_MODIFIED
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(status: u16, method: Method, exact: Option<u64>, set: &[(&str, &str)]) -> String {
        let mut headers = http::HeaderMap::new();
        for (name, value) in set {
            headers.insert(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        frame(
            &mut headers,
            StatusCode::from_u16(status).unwrap(),
            &method,
            exact,
        );
        let mut names: Vec<String> = headers
            .iter()
            .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap()))
            .collect();
        names.sort();
        names.join(", ")
    }

    #[test]
    fn answers_are_framed_as_hyper_frames_them() {
        assert_eq!(framed(200, Method::GET, Some(5), &[]), "content-length: 5");
        assert_eq!(framed(201, Method::POST, Some(0), &[]), "content-length: 0");
        assert_eq!(
            framed(200, Method::GET, None, &[]),
            "transfer-encoding: chunked"
        );
        assert_eq!(framed(204, Method::DELETE, Some(0), &[]), "");
        assert_eq!(
            framed(204, Method::PUT, Some(0), &[("content-length", "0")]),
            ""
        );
        assert_eq!(framed(304, Method::GET, Some(3), &[]), "");
        assert_eq!(framed(200, Method::HEAD, Some(0), &[]), "");
        assert_eq!(framed(200, Method::HEAD, Some(7), &[]), "content-length: 7");
        assert_eq!(framed(200, Method::HEAD, None, &[]), "");
        assert_eq!(
            framed(200, Method::GET, Some(9), &[("content-length", "9")]),
            "content-length: 9"
        );
    }

    #[test]
    fn only_answers_with_a_body_carry_it() {
        assert!(carries_body(StatusCode::OK, &Method::GET));
        assert!(carries_body(StatusCode::NOT_FOUND, &Method::POST));
        assert!(!carries_body(StatusCode::OK, &Method::HEAD));
        assert!(!carries_body(StatusCode::NO_CONTENT, &Method::PUT));
        assert!(!carries_body(StatusCode::NOT_MODIFIED, &Method::GET));
        assert!(!carries_body(StatusCode::CONTINUE, &Method::GET));
    }
}
