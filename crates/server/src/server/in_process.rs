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

/// The framing headers hyper's HTTP/1 server writes: none on an informational or 204 answer;
/// otherwise the application's `Content-Length`, else the body's exact length, else chunked.
fn frame(headers: &mut http::HeaderMap, status: StatusCode, method: &Method, exact: Option<u64>) {
    if status.is_informational() || status == StatusCode::NO_CONTENT {
        headers.remove(CONTENT_LENGTH);
        headers.remove(TRANSFER_ENCODING);
        return;
    }
    if headers.contains_key(CONTENT_LENGTH) || headers.contains_key(TRANSFER_ENCODING) {
        return;
    }
    match exact {
        Some(len) => {
            headers.insert(CONTENT_LENGTH, HeaderValue::from(len));
        }
        None if method != Method::HEAD => {
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
