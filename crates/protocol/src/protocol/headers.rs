//! Header names and the small header grammars: response format negotiation (`Accept`,
//! `$format`), `Prefer`, `x-ms-version`.

use super::error::{ApiError, ErrorCode, ErrorFormat};

pub const X_MS_VERSION: &str = "x-ms-version";
pub const X_MS_REQUEST_ID: &str = "x-ms-request-id";
pub const X_MS_CLIENT_REQUEST_ID: &str = "x-ms-client-request-id";
pub const X_MS_ERROR_CODE: &str = "x-ms-error-code";
pub const X_HTTP_METHOD: &str = "x-http-method";
pub const PREFER: &str = "prefer";
pub const PREFERENCE_APPLIED: &str = "preference-applied";
pub const DATA_SERVICE_ID: &str = "dataserviceid";
pub const CONTINUATION_NEXT_PARTITION_KEY: &str = "x-ms-continuation-nextpartitionkey";
pub const CONTINUATION_NEXT_ROW_KEY: &str = "x-ms-continuation-nextrowkey";
pub const CONTINUATION_NEXT_TABLE_NAME: &str = "x-ms-continuation-nexttablename";
/// Opt-in request header (`true`): query responses then carry [`X_TABLESTORE_PLAN`] and
/// [`X_TABLESTORE_EXAMINED`]. Our own diagnostics; Azure has nothing like it.
pub const X_TABLESTORE_DEBUG_PLAN: &str = "x-tablestore-debug-plan";
/// A short description of the query plan (`point+filter`, `union(2):point,point+filter`, …).
pub const X_TABLESTORE_PLAN: &str = "x-tablestore-plan";
/// Entities (or tables) the page read from the store, including the look-ahead.
pub const X_TABLESTORE_EXAMINED: &str = "x-tablestore-examined";
/// Response header (with `x-tablestore-debug-plan: true`): the design guide's query class.
pub const X_TABLESTORE_CLASS: &str = "x-tablestore-class";
/// Response header (with `x-tablestore-debug-plan: true`): entities in this page.
pub const X_TABLESTORE_RETURNED: &str = "x-tablestore-returned";
/// Response header (with `x-tablestore-debug-plan: true`): pages the whole result takes from
/// this page on (`1000+` past a thousand).
pub const X_TABLESTORE_PAGES: &str = "x-tablestore-pages";

/// The version assumed when a request sends none, and the one the SDKs send.
pub const DEFAULT_VERSION: &str = "2019-02-02";

/// OData JSON metadata level of a response (minimal unless the request asks otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Metadata {
    None,
    #[default]
    Minimal,
    Full,
}

impl Metadata {
    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Metadata::None => "application/json;odata=nometadata;streaming=true;charset=utf-8",
            Metadata::Minimal => {
                "application/json;odata=minimalmetadata;streaming=true;charset=utf-8"
            }
            Metadata::Full => "application/json;odata=fullmetadata;streaming=true;charset=utf-8",
        }
    }
}

/// Picks the metadata level from `$format` (which wins) or `Accept` (Azure docs: "Payload format for Table service operations"). Atom and
/// verbose JSON are refused with Azure's 415 codes.
pub fn negotiate_metadata(
    accept: Option<&str>,
    format: Option<&str>,
) -> Result<Metadata, ApiError> {
    if let Some(f) = format.map(str::trim).filter(|f| !f.is_empty()) {
        if f.eq_ignore_ascii_case("json") {
            return Ok(Metadata::Minimal);
        }
        return media_type_metadata(f)?
            .ok_or_else(|| ApiError::new(ErrorCode::MediaTypeNotSupported));
    }
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Ok(Metadata::Minimal);
    };
    let mut refusal = None;
    for media in accept.split(',') {
        match media_type_metadata(media) {
            Ok(Some(m)) => return Ok(m),
            Ok(None) => {}
            Err(e) => refusal = refusal.or(Some(e)),
        }
    }
    match refusal {
        Some(e) => Err(e),
        // Anything else (`text/html`, …): answer JSON rather than refuse [emu].
        None => Ok(Metadata::Minimal),
    }
}

/// `Ok(Some)` for a JSON media type, `Err` for Atom/verbose, `Ok(None)` for anything else.
fn media_type_metadata(media: &str) -> Result<Option<Metadata>, ApiError> {
    // Compared without case, in place: this runs for every request that sends `Accept`.
    let mut parts = media.split(';').map(str::trim);
    let base = parts.next().unwrap_or("");
    let odata = parts
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("odata"))
        .map(|(_, v)| v.trim());
    let is = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    if is(base, "application/json") {
        return match odata {
            None => Ok(Some(Metadata::Minimal)),
            Some(v) if is(v, "minimalmetadata") => Ok(Some(Metadata::Minimal)),
            Some(v) if is(v, "nometadata") => Ok(Some(Metadata::None)),
            Some(v) if is(v, "fullmetadata") => Ok(Some(Metadata::Full)),
            Some(v) if is(v, "verbose") => {
                Err(ApiError::new(ErrorCode::JsonVerboseFormatNotSupported))
            }
            Some(_) => Err(ApiError::new(ErrorCode::MediaTypeNotSupported)),
        };
    }
    if is(base, "*/*") || is(base, "application/*") {
        return Ok(Some(Metadata::Minimal));
    }
    if is(base, "application/atom+xml") || is(base, "application/xml") {
        return Err(ApiError::new(ErrorCode::AtomFormatNotSupported));
    }
    Ok(None)
}

/// Whether `haystack` contains `needle` (lower-case ASCII), ignoring ASCII case.
fn contains_ignore_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
}

/// Error bodies follow `Accept`: JSON when it names JSON or is absent, OData XML otherwise
/// (Azure answered `Accept: */*` with the XML form, Azure docs: "Payload format for Table service operations").
pub fn error_format(accept: Option<&str>) -> ErrorFormat {
    match accept {
        None => ErrorFormat::Json,
        Some(a) if a.trim().is_empty() || contains_ignore_case(a, "json") => ErrorFormat::Json,
        Some(_) => ErrorFormat::ODataXml,
    }
}

/// The `Prefer` header's return preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnPreference {
    Content,
    NoContent,
}

impl ReturnPreference {
    pub fn parse(prefer: Option<&str>) -> Option<ReturnPreference> {
        let prefer = prefer?;
        prefer.split(',').map(str::trim).find_map(|p| {
            if p.eq_ignore_ascii_case("return-no-content") {
                Some(ReturnPreference::NoContent)
            } else if p.eq_ignore_ascii_case("return-content") {
                Some(ReturnPreference::Content)
            } else {
                None
            }
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReturnPreference::Content => "return-content",
            ReturnPreference::NoContent => "return-no-content",
        }
    }
}

/// Whether a request body's Content-Type is acceptable JSON; Atom and other types are refused.
pub fn check_json_content_type(content_type: Option<&str>) -> Result<(), ApiError> {
    let Some(ct) = content_type.map(str::trim).filter(|c| !c.is_empty()) else {
        return Ok(());
    };
    let base = ct.split(';').next().unwrap_or("").trim();
    if base.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else if base.eq_ignore_ascii_case("application/atom+xml")
        || base.eq_ignore_ascii_case("application/xml")
    {
        Err(ApiError::new(ErrorCode::AtomFormatNotSupported))
    } else {
        Err(ApiError::new(ErrorCode::MediaTypeNotSupported))
    }
}

/// Validates an `x-ms-version` value's syntax (`YYYY-MM-DD`).
pub fn is_valid_version(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        assert_eq!(negotiate_metadata(None, None).unwrap(), Metadata::Minimal);
        assert_eq!(
            negotiate_metadata(Some("application/json;odata=nometadata"), None).unwrap(),
            Metadata::None
        );
        assert_eq!(
            negotiate_metadata(Some("application/json; odata=FullMetadata"), None).unwrap(),
            Metadata::Full
        );
        assert_eq!(
            negotiate_metadata(
                Some("application/json;odata=nometadata"),
                Some("application/json;odata=fullmetadata")
            )
            .unwrap(),
            Metadata::Full
        );
        assert_eq!(
            negotiate_metadata(Some("application/atom+xml,application/xml"), None)
                .unwrap_err()
                .code,
            ErrorCode::AtomFormatNotSupported
        );
        assert_eq!(
            negotiate_metadata(Some("application/json;odata=verbose"), None)
                .unwrap_err()
                .code,
            ErrorCode::JsonVerboseFormatNotSupported
        );
        assert_eq!(
            negotiate_metadata(Some("*/*"), None).unwrap(),
            Metadata::Minimal
        );
    }

    #[test]
    fn prefer_and_versions() {
        assert_eq!(
            ReturnPreference::parse(Some("return-no-content")),
            Some(ReturnPreference::NoContent)
        );
        assert_eq!(ReturnPreference::parse(Some("odata.foo")), None);
        assert!(is_valid_version("2019-02-02"));
        assert!(!is_valid_version("2019-2-02"));
    }
}
