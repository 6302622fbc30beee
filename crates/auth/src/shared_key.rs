//! Shared Key and Shared Key Lite verification for the Table service (Azure docs: "Authorize with Shared Key"): parses the
//! `Authorization` header, picks the date, builds the candidate strings-to-sign and compares
//! signatures in constant time against every key of the account.
//!
//! Candidates tried, in order (the first is the one reported on failure):
//!
//! 1. date = `x-ms-date` if present, else `Date`; resource = `/{account}{raw path}[?comp=…]`;
//! 2. when both date headers are present, the same with the `Date` header [emu, as Azurite];
//! 3. on a secondary endpoint, the resource as the client may have built it: path style
//!    `/{account}/{account}-secondary/…` vs `/{account}/{account}/…`, host style
//!    `/{account}-secondary/…` vs `/{account}/…` (JS/.NET sign the `-secondary` form; Azure docs:
//!    "Authorize with Shared Key" names the primary form) [emu: accept both].
//!
//! Depends on nothing else in the crate.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use subtle::ConstantTimeEq;

use super::accounts::AccountKeys;
use super::canonical::{
    canonicalized_resource, hmac_keyed, shared_key_lite_string_to_sign, shared_key_string_to_sign,
};
use super::error::{AuthError, AuthFailure};
use super::time::parse_http_date;
use super::{AuthOptions, RequestView};

/// Which Shared Key flavour the header named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SharedKeyScheme {
    SharedKey,
    SharedKeyLite,
}

impl SharedKeyScheme {
    /// The scheme word as written in the header.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SharedKeyScheme::SharedKey => "SharedKey",
            SharedKeyScheme::SharedKeyLite => "SharedKeyLite",
        }
    }
}

fn header<'a>(req: &'a RequestView<'_>, name: impl http::header::AsHeaderName) -> Option<&'a str> {
    req.headers.get(name).and_then(|v| v.to_str().ok())
}

/// `x-ms-date`, parsed once (a name given as text is parsed again at every lookup).
const X_MS_DATE: http::HeaderName = http::HeaderName::from_static("x-ms-date");
/// `content-md5`, parsed once.
const CONTENT_MD5: http::HeaderName = http::HeaderName::from_static("content-md5");

/// Parses `{account}:{signature}` after the scheme word. Like the service, empty pieces are
/// dropped before counting, so exactly two non-empty pieces are needed; the signature must be
/// base64 (its bytes are returned with it).
fn parse_credentials(
    scheme: SharedKeyScheme,
    params: &str,
) -> Result<(&str, &str, Vec<u8>), AuthError> {
    let mut pieces = params.split(':').filter(|p| !p.is_empty());
    let (Some(account), Some(signature), None) = (pieces.next(), pieces.next(), pieces.next())
    else {
        return Err(AuthError::malformed_header(format!(
            "Authorization value '{} {params}' is invalid.",
            scheme.as_str()
        )));
    };
    let Ok(decoded) = BASE64.decode(signature) else {
        return Err(AuthError::malformed_header(
            "Signature is not a valid base64 string.",
        ));
    };
    Ok((account, signature, decoded))
}

/// Whether `name` is `{account}-secondary`.
fn is_secondary_of(name: &str, account: &str) -> bool {
    name.strip_suffix("-secondary") == Some(account)
}

/// The resource strings a client may have signed (see the module notes).
fn resource_candidates(req: &RequestView<'_>) -> Vec<String> {
    let account = req.account;
    let mut out = vec![canonicalized_resource(account, req.raw_path, req.raw_query)];
    if req.path_style {
        // First path segment is the account as addressed.
        let rest = req.raw_path.strip_prefix('/').unwrap_or(req.raw_path);
        let (segment, tail) = rest.split_once('/').map_or((rest, ""), |(s, t)| (s, t));
        if is_secondary_of(segment, account) {
            let primary_path = if tail.is_empty() && !rest.contains('/') {
                format!("/{account}")
            } else {
                format!("/{account}/{tail}")
            };
            // The documented (primary-name) form first: it is the one reported on failure.
            out.insert(
                0,
                canonicalized_resource(account, &primary_path, req.raw_query),
            );
        }
    } else {
        let host = header(req, http::header::HOST).unwrap_or("");
        let first_label = host.split('.').next().unwrap_or("");
        let secondary = format!("{account}-secondary");
        if first_label.eq_ignore_ascii_case(&secondary) {
            out.push(canonicalized_resource(
                &secondary,
                req.raw_path,
                req.raw_query,
            ));
        }
    }
    out
}

/// Verifies a `SharedKey`/`SharedKeyLite` header; `params` is the text after the scheme word.
pub(crate) fn authenticate_shared_key(
    req: &RequestView<'_>,
    scheme: SharedKeyScheme,
    params: &str,
    keys: Option<&AccountKeys>,
    options: &AuthOptions,
) -> Result<(), AuthError> {
    let (header_account, signature, provided) = parse_credentials(scheme, params.trim())?;

    // Dates: x-ms-date governs; Date is the fallback and, when both exist, a second candidate.
    let x_ms_date = header(req, X_MS_DATE).filter(|d| !d.is_empty());
    let date = header(req, http::header::DATE).filter(|d| !d.is_empty());
    let governing = x_ms_date.or(date).ok_or(AuthError::AuthenticationFailed(
        AuthFailure::DateHeaderMissing,
    ))?;
    let parsed = parse_http_date(governing).ok_or(AuthError::AuthenticationFailed(
        AuthFailure::DateHeaderInvalid,
    ))?;
    if let Some(max_skew) = options.max_clock_skew {
        check_skew(parsed, req.now, max_skew)?;
    }

    // The header may name the primary or, on a secondary endpoint, the secondary account.
    if header_account != req.account && !is_secondary_of(header_account, req.account) {
        return Err(AuthError::AuthenticationFailed(
            AuthFailure::AccountMismatch {
                header_account: header_account.to_string(),
            },
        ));
    }
    let keys = keys.ok_or_else(|| {
        AuthError::AuthenticationFailed(AuthFailure::UnknownAccount {
            account: req.account.to_string(),
        })
    })?;

    let second_date = match (x_ms_date, date) {
        (Some(_), Some(d)) if d != governing => Some(d),
        _ => None,
    };
    let dates = std::iter::once(governing).chain(second_date);
    let content_md5 = header(req, CONTENT_MD5).unwrap_or("");
    let content_type = header(req, http::header::CONTENT_TYPE).unwrap_or("");

    let mut candidates = Vec::new();
    for resource in resource_candidates(req) {
        for d in dates.clone() {
            candidates.push(match scheme {
                SharedKeyScheme::SharedKey => {
                    let method = req.method.to_ascii_uppercase();
                    shared_key_string_to_sign(&method, content_md5, content_type, d, &resource)
                }
                SharedKeyScheme::SharedKeyLite => shared_key_lite_string_to_sign(d, &resource),
            });
        }
    }

    // Signatures are compared as decoded bytes in constant time; every candidate and key is
    // tried so timing does not reveal which one matched.
    let mut matched = subtle::Choice::from(0u8);
    for string_to_sign in &candidates {
        for keyed in keys.keyed_macs() {
            let computed = hmac_keyed(keyed, string_to_sign.as_bytes());
            matched |= computed.as_slice().ct_eq(provided.as_slice());
        }
    }
    if bool::from(matched) {
        Ok(())
    } else {
        Err(AuthError::AuthenticationFailed(
            AuthFailure::SignatureMismatch {
                signature: signature.to_string(),
                string_to_sign: candidates.swap_remove(0),
            },
        ))
    }
}

fn check_skew(
    date: DateTime<Utc>,
    now: DateTime<Utc>,
    max_skew: chrono::Duration,
) -> Result<(), AuthError> {
    if date < now - max_skew {
        return Err(AuthError::AuthenticationFailed(
            AuthFailure::DateHeaderTooOld { date },
        ));
    }
    if date > now + max_skew {
        return Err(AuthError::AuthenticationFailed(
            AuthFailure::DateHeaderInFuture { date },
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_parsing() {
        let s = SharedKeyScheme::SharedKey;
        let sig = b"sig".to_vec();
        assert_eq!(
            parse_credentials(s, "acct:c2ln").unwrap(),
            ("acct", "c2ln", sig.clone())
        );
        // Empty pieces are dropped, as the service does.
        assert_eq!(
            parse_credentials(s, "acct::c2ln").unwrap(),
            ("acct", "c2ln", sig)
        );
        for bad in ["acct", "acct:", ":sig", "a:b:c", ""] {
            let e = parse_credentials(s, bad).unwrap_err();
            assert_eq!(e.code(), "InvalidAuthenticationInfo", "{bad}");
            assert_eq!(e.status(), 400);
        }
        let e = parse_credentials(s, "acct:not base64!").unwrap_err();
        assert_eq!(
            e.authentication_error_detail().unwrap(),
            "Signature is not a valid base64 string."
        );
    }

    #[test]
    fn skew_bounds() {
        let now = parse_http_date("Mon, 27 Jun 2016 15:25:14 GMT").unwrap();
        let m15 = chrono::Duration::minutes(15);
        assert!(check_skew(now, now, m15).is_ok());
        assert!(check_skew(now - m15, now, m15).is_ok());
        assert!(check_skew(now + m15, now, m15).is_ok());
        let old = now - m15 - chrono::Duration::seconds(1);
        let e = check_skew(old, now, m15).unwrap_err();
        assert_eq!(
            e.authentication_error_detail().unwrap(),
            "Request date header too old: 'Mon, 27 Jun 2016 15:10:13 GMT'"
        );
        assert!(check_skew(now + m15 + chrono::Duration::seconds(1), now, m15).is_err());
    }
}
