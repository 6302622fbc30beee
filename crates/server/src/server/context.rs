//! Per-request context (request id, version, account, base URL, negotiated formats) and the
//! response builders that add Azure's standard headers to every answer.

use axum::body::Body;
use axum::http::header::{self, IntoHeaderName};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use crate::model::EdmDateTime;
use crate::protocol::dialect::{Dialect, RequestKind};
use crate::protocol::error::{ErrorFormat, LogCause};
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

/// A request's id (`x-ms-request-id`): a UUID in the version-4 text form Azure's ids have.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestId([u8; 36]);

impl RequestId {
    /// The next id of this process. Unique within the process: the low 62 bits of the UUID
    /// are a bijection of a counter (offset by a random start), the rest is mixed from the
    /// counter and a per-process random value, so ids look random. No system call per request
    /// (a version-4 UUID from the kernel's randomness each time was 1 % of a point read's
    /// CPU).
    pub(crate) fn next() -> RequestId {
        use std::sync::atomic::{AtomicU64, Ordering};
        use std::sync::OnceLock;
        static SEED: OnceLock<(u64, u64)> = OnceLock::new();
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let (high_seed, low_seed) = *SEED.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        const LOW_BITS: u64 = (1 << 62) - 1;
        let low = permute62(n.wrapping_add(low_seed) & LOW_BITS);
        let high = mix64(n ^ high_seed);
        let uuid = uuid::Builder::from_u128((u128::from(high) << 64) | u128::from(low))
            .with_version(uuid::Version::Random)
            .with_variant(uuid::Variant::RFC4122)
            .into_uuid();
        let mut text = [0u8; 36];
        uuid.hyphenated().encode_lower(&mut text);
        RequestId(text)
    }

    pub(crate) fn as_str(&self) -> &str {
        // Only ever the ASCII text `encode_lower` wrote.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Debug for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A bijection of the 62-bit values (xor-shifts and multiplications by odd constants, each
/// invertible modulo 2^62): distinct inputs give distinct outputs.
fn permute62(mut x: u64) -> u64 {
    const MASK: u64 = (1 << 62) - 1;
    x ^= x >> 31;
    x = x.wrapping_mul(0x7fb5_d329_728e_a185) & MASK;
    x ^= x >> 27;
    x = x.wrapping_mul(0x81da_def4_bc2d_d44d) & MASK;
    x ^ (x >> 33)
}

/// SplitMix64's finaliser: spreads every input bit over the output.
fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The names of the headers answers carry and requests are read for, parsed once: a name
/// given as text is parsed and checked again at every insert or lookup.
pub(crate) mod names {
    use axum::http::HeaderName;

    use crate::protocol::headers;

    pub(crate) const X_MS_REQUEST_ID: HeaderName =
        HeaderName::from_static(headers::X_MS_REQUEST_ID);
    pub(crate) const X_MS_VERSION: HeaderName = HeaderName::from_static(headers::X_MS_VERSION);
    pub(crate) const X_MS_CLIENT_REQUEST_ID: HeaderName =
        HeaderName::from_static(headers::X_MS_CLIENT_REQUEST_ID);
    pub(crate) const DATA_SERVICE_ID: HeaderName =
        HeaderName::from_static(headers::DATA_SERVICE_ID);
    pub(crate) const PREFERENCE_APPLIED: HeaderName =
        HeaderName::from_static(headers::PREFERENCE_APPLIED);
    pub(crate) const PREFER: HeaderName = HeaderName::from_static(headers::PREFER);
    pub(crate) const X_HTTP_METHOD: HeaderName = HeaderName::from_static(headers::X_HTTP_METHOD);
}

/// Headers an answer has besides the standard ones and a body's `Content-Type`: room enough
/// that the map is allocated once.
const HEADERS_PER_ANSWER: usize = 12;

pub(crate) struct RequestContext {
    pub(crate) request_id: RequestId,
    /// The request's `x-ms-version` (when it is text), echoed back.
    pub(crate) version: HeaderValue,
    pub(crate) client_request_id: Option<HeaderValue>,
    pub(crate) error_format: ErrorFormat,
    /// Account as addressed (may end in `-secondary`).
    pub(crate) account: String,
    /// `{base}`: scheme, host and (path style) account, no trailing slash.
    pub(crate) base_url: String,
    /// How the server answers (`--flavor`'s dialect).
    pub(crate) dialect: &'static Dialect,
    /// Read, plain POST or other write (Cosmos types errors by it).
    pub(crate) request_kind: RequestKind,
}

impl RequestContext {
    pub(crate) fn new(headers: &HeaderMap, dialect: &'static Dialect) -> RequestContext {
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        let client_request_id = headers
            .get(names::X_MS_CLIENT_REQUEST_ID)
            .filter(|v| v.len() <= 1024 && v.to_str().is_ok())
            .cloned();
        RequestContext {
            request_id: RequestId::next(),
            version: headers
                .get(names::X_MS_VERSION)
                .filter(|v| v.to_str().is_ok())
                .cloned()
                .unwrap_or(HeaderValue::from_static(DEFAULT_VERSION)),
            client_request_id,
            error_format: headers::error_format(accept),
            account: String::new(),
            base_url: String::new(),
            dialect,
            request_kind: RequestKind::Read,
        }
    }

    /// The account whose data is addressed (`-secondary` reads the primary's data).
    pub(crate) fn data_account(&self) -> &str {
        self.account
            .strip_suffix("-secondary")
            .unwrap_or(&self.account)
    }

    fn standard_headers(&self, h: &mut HeaderMap) {
        if let Ok(v) = HeaderValue::from_bytes(&self.request_id.0) {
            h.insert(names::X_MS_REQUEST_ID, v);
        }
        if !self.dialect.storage_headers {
            h.insert(header::DATE, http_date_now());
            return;
        }
        h.insert(names::X_MS_VERSION, self.version.clone());
        if let Some(v) = &self.client_request_id {
            h.insert(names::X_MS_CLIENT_REQUEST_ID, v.clone());
        }
        h.insert(header::DATE, http_date_now());
        h.insert(
            header::SERVER,
            HeaderValue::from_static("Windows-Azure-Table/1.0 Microsoft-HTTPAPI/2.0"),
        );
    }

    /// The Content-Type of a JSON answer at `metadata`, as the dialect writes it.
    pub(crate) fn json_content_type(&self, metadata: headers::Metadata) -> &'static str {
        self.dialect.json_content_type(metadata)
    }

    /// A response with the standard headers plus the OData ones (`Cache-Control`,
    /// `X-Content-Type-Options`).
    pub(crate) fn odata_response(&self, status: StatusCode) -> ResponseParts {
        let mut parts = self.plain_response(status);
        if !self.dialect.storage_headers {
            return parts;
        }
        parts
            .headers
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        parts.headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        parts
    }

    /// A response with only the standard headers (ACL, service properties).
    pub(crate) fn plain_response(&self, status: StatusCode) -> ResponseParts {
        let mut parts = ResponseParts {
            status,
            headers: HeaderMap::with_capacity(HEADERS_PER_ANSWER),
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
        let error = &self.dialect.error(error);
        let time = EdmDateTime::now().to_fixed7();
        let message = self
            .dialect
            .error_message(error, self.request_id.as_str(), &time);
        let (content_type, body) =
            self.dialect
                .error_body(error, format, &message, self.request_kind);
        parts.header("content-type", content_type);
        if self.dialect.storage_headers {
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
    /// Adds a header (named by a [`HeaderName`], or by its lower-case text); values that are
    /// not valid header text are skipped (they cannot occur for the values the server writes,
    /// which are ASCII or percent-encoded).
    pub(crate) fn header(&mut self, name: impl IntoHeaderName, value: &str) -> &mut Self {
        if let Ok(v) = HeaderValue::from_str(value) {
            self.headers.insert(name, v);
        }
        self
    }

    pub(crate) fn body(&mut self, content_type: &'static str, body: Vec<u8>) -> &mut Self {
        self.headers
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_are_distinct_version_4_uuids() {
        let ids: Vec<RequestId> = (0..10_000).map(|_| RequestId::next()).collect();
        let mut texts: Vec<&str> = ids.iter().map(RequestId::as_str).collect();
        for text in &texts {
            let uuid = uuid::Uuid::parse_str(text).expect("a UUID");
            assert_eq!(uuid.get_version(), Some(uuid::Version::Random), "{text}");
            assert_eq!(uuid.get_variant(), uuid::Variant::RFC4122, "{text}");
            assert_eq!(uuid.hyphenated().to_string(), *text);
        }
        texts.sort_unstable();
        texts.dedup();
        assert_eq!(texts.len(), ids.len());
    }

    #[test]
    fn the_counter_permutation_is_one_to_one_within_62_bits() {
        let mask = (1u64 << 62) - 1;
        let mut seen: Vec<u64> = (0..100_000u64)
            .chain((0..100_000u64).map(|i| mask - i))
            .map(permute62)
            .collect();
        assert!(seen.iter().all(|x| *x <= mask));
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 200_000);
    }
}
