//! Per-request context (request id, version, account, base URL, negotiated formats) and the
//! response builders that add Azure's standard headers to every answer.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;

use crate::model::{EdmDateTime, Flavor};
use crate::protocol::error::{ErrorFormat, LogCause};
use crate::protocol::flavor;
use crate::protocol::headers::{self, DEFAULT_VERSION};
use crate::protocol::ApiError;

/// The `Date` header value for the current second, formatted once per second per thread
/// instead of once per response.
fn http_date_now() -> HeaderValue {
    use std::cell::RefCell;
    thread_local! {
        static CACHE: RefCell<(i64, HeaderValue)> =
            const { RefCell::new((i64::MIN, HeaderValue::from_static(""))) };
    }
    let now = EdmDateTime::now();
    let second = now.0.div_euclid(10_000_000);
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.0 != second {
            if let Ok(v) = HeaderValue::from_str(&now.to_rfc1123()) {
                *cache = (second, v);
            }
        }
        cache.1.clone()
    })
}

pub(crate) struct RequestContext {
    pub(crate) request_id: String,
    /// The request's `x-ms-version`, echoed back.
    pub(crate) version: String,
    pub(crate) client_request_id: Option<HeaderValue>,
    pub(crate) error_format: ErrorFormat,
    /// Account as addressed (may end in `-secondary`).
    pub(crate) account: String,
    /// `{base}`: scheme, host and (path style) account, no trailing slash.
    pub(crate) base_url: String,
    /// The service the server answers as (`--flavor`).
    pub(crate) flavor: Flavor,
    /// Read, plain POST or other write (Cosmos types errors by it).
    pub(crate) request_kind: flavor::RequestKind,
}

impl RequestContext {
    pub(crate) fn new(headers: &HeaderMap, flavor: Flavor) -> RequestContext {
        let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let client_request_id = headers
            .get(headers::X_MS_CLIENT_REQUEST_ID)
            .filter(|v| v.len() <= 1024 && v.to_str().is_ok())
            .cloned();
        RequestContext {
            request_id: uuid::Uuid::new_v4().to_string(),
            version: header(headers::X_MS_VERSION)
                .unwrap_or(DEFAULT_VERSION)
                .to_string(),
            client_request_id,
            error_format: headers::error_format(header("accept")),
            account: String::new(),
            base_url: String::new(),
            flavor,
            request_kind: flavor::RequestKind::Read,
        }
    }

    /// The account whose data is addressed (`-secondary` reads the primary's data).
    pub(crate) fn data_account(&self) -> &str {
        self.account
            .strip_suffix("-secondary")
            .unwrap_or(&self.account)
    }

    fn standard_headers(&self, h: &mut HeaderMap) {
        if let Ok(v) = HeaderValue::from_str(&self.request_id) {
            h.insert(headers::X_MS_REQUEST_ID, v);
        }
        if !flavor::sends_storage_headers(self.flavor) {
            h.insert("date", http_date_now());
            return;
        }
        if let Ok(v) = HeaderValue::from_str(&self.version) {
            h.insert(headers::X_MS_VERSION, v);
        }
        if let Some(v) = &self.client_request_id {
            h.insert(headers::X_MS_CLIENT_REQUEST_ID, v.clone());
        }
        h.insert("date", http_date_now());
        h.insert(
            "server",
            HeaderValue::from_static("Windows-Azure-Table/1.0 Microsoft-HTTPAPI/2.0"),
        );
    }

    /// The Content-Type of a JSON answer at `metadata`, as the flavour writes it.
    pub(crate) fn json_content_type(&self, metadata: headers::Metadata) -> &'static str {
        flavor::json_content_type(metadata, self.flavor)
    }

    /// A response with the standard headers plus the OData ones (`Cache-Control`,
    /// `X-Content-Type-Options`).
    pub(crate) fn odata_response(&self, status: StatusCode) -> ResponseParts {
        let mut parts = self.plain_response(status);
        if !flavor::sends_storage_headers(self.flavor) {
            return parts;
        }
        parts
            .headers
            .insert("cache-control", HeaderValue::from_static("no-cache"));
        parts.headers.insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        parts
    }

    /// A response with only the standard headers (ACL, service properties).
    pub(crate) fn plain_response(&self, status: StatusCode) -> ResponseParts {
        let mut parts = ResponseParts {
            status,
            headers: HeaderMap::new(),
            body: Vec::new(),
        };
        self.standard_headers(&mut parts.headers);
        parts
    }

    /// Azure's error response. OData bodies also carry `x-ms-error-code` here (the issue
    /// asks for it on every error; SDKs read the body first, so it is harmless).
    pub(crate) fn error_response(&self, error: &ApiError, format: ErrorFormat) -> Response {
        // 501 NotImplemented is an answer, not a fault; only real faults are logged as errors.
        if error.status().is_server_error()
            && error.code != crate::protocol::ErrorCode::NotImplemented
        {
            tracing::error!(request_id = %self.request_id, code = error.code.as_str(), message = %error.message, "request failed");
        }
        let mut parts = match format {
            ErrorFormat::StorageXml => self.plain_response(error.status()),
            _ => self.odata_response(error.status()),
        };
        let error = &flavor::flavoured_error(error, self.flavor);
        let time = EdmDateTime::now().to_fixed7();
        let message = flavor::error_message(error, self.flavor, &self.request_id, &time);
        let (content_type, body) =
            flavor::error_body(error, self.flavor, format, &message, self.request_kind);
        parts.header("content-type", content_type);
        if flavor::sends_storage_headers(self.flavor) {
            parts.header(headers::X_MS_ERROR_CODE, error.code.as_str());
        }
        if let Some(challenge) = &error.challenge {
            parts.header("www-authenticate", challenge);
        }
        parts.body = body;
        let mut response = parts.into_response();
        // For the access log, in every flavour (Cosmos sends no `x-ms-error-code`), and why
        // the request was refused when the error says (the log only, never the wire).
        response
            .extensions_mut()
            .insert(AnsweredError(error.code.as_str()));
        if let Some(cause) = &error.cause {
            response.extensions_mut().insert(LogCause::clone(cause));
        }
        response
    }

    /// Error response in the format negotiated for OData operations.
    pub(crate) fn error(&self, error: &ApiError) -> Response {
        self.error_response(error, self.error_format)
    }
}

/// The Azure error code a response answers, kept on it for the access log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnsweredError(pub(crate) &'static str);

/// A response being built.
pub(crate) struct ResponseParts {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl ResponseParts {
    /// Adds a header; values that are not valid header text are skipped (they cannot occur
    /// for the values the server writes, which are ASCII or percent-encoded).
    pub(crate) fn header(&mut self, name: &'static str, value: &str) -> &mut Self {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.insert(HeaderName::from_static(name), v);
        }
        self
    }

    pub(crate) fn body(&mut self, content_type: &'static str, body: Vec<u8>) -> &mut Self {
        self.headers
            .insert("content-type", HeaderValue::from_static(content_type));
        self.body = body;
        self
    }

    pub(crate) fn into_response(self) -> Response {
        let mut response = Response::new(Body::from(self.body));
        *response.status_mut() = self.status;
        *response.headers_mut() = self.headers;
        response
    }
}
