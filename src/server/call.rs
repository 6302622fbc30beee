//! [`Call`]: everything a handler needs from one request once it has been let in (context,
//! principal, headers, query, body). Its own module so that the dispatcher and the handlers
//! both import it, and neither imports the other's internals.

use axum::http::HeaderMap;
use bytes::Bytes;

use super::auth;
use super::context::RequestContext;
use crate::auth::Principal;
use crate::model::TableRef;
use crate::protocol::uri::QueryParams;
use crate::protocol::ApiError;

/// Everything a handler needs from the request.
pub struct Call {
    pub ctx: RequestContext,
    /// Who is calling (`None` with `--disable-auth`); handlers enforce its SAS key range.
    pub principal: Option<Principal>,
    pub headers: HeaderMap,
    pub query: QueryParams,
    pub body: Bytes,
    pub is_head: bool,
}

impl Call {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Table `name` of the account the request addresses.
    pub fn table(&self, name: impl Into<String>) -> TableRef {
        TableRef::new(self.ctx.data_account(), name)
    }

    /// Refuses an entity key outside the caller's SAS key range.
    pub fn check_key(&self, partition_key: &str, row_key: &str) -> Result<(), ApiError> {
        auth::check_key(self.principal.as_ref(), partition_key, row_key)
    }
}
