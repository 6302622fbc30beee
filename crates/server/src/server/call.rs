//! [`Call`]: everything the pipeline needs from one request once it has been let in (context,
//! the caller's scope, headers, query, body). Its own module so that admission, the decode
//! and encode steps and the dispatcher all import it, and none imports another's internals.

use axum::http::HeaderMap;
use bytes::Bytes;

use super::context::RequestContext;
use crate::exec::Scope;
use crate::protocol::uri::QueryParams;

/// Everything the pipeline needs from the request.
pub(crate) struct Call {
    pub(crate) ctx: RequestContext,
    /// The account addressed and who is calling; the executor enforces its SAS grant.
    pub(crate) scope: Scope,
    pub(crate) headers: HeaderMap,
    pub(crate) query: QueryParams,
    pub(crate) body: Bytes,
    pub(crate) is_head: bool,
}

impl Call {
    /// A header's text (name it by a [`axum::http::HeaderName`] where it is looked up per
    /// request: a name given as text is parsed at every lookup).
    pub(crate) fn header(&self, name: impl axum::http::header::AsHeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}
