//! Bearer tokens (Microsoft Entra ID / OAuth) for an emulator: `Authorization: Bearer <jwt>`.
//!
//! **What is checked**
//!
//! * the request came over HTTPS (`is_https`); over HTTP → 403 `AuthenticationFailed`
//!   ("Authentication scheme Bearer is not allowed with HTTP.", Azurite's wording);
//! * the token is a well-formed JWT: three `.`-separated parts, the first two base64url
//!   (padding optional) JSON objects, the header naming a string `alg`; otherwise → 400
//!   `InvalidAuthenticationInfo`;
//! * the payload has a numeric `exp`, and `nbf` if present is numeric; `nbf − 5 min ≤ now <
//!   exp + 5 min` (the 5-minute clock skew is the .NET IdentityModel default that Azure's
//!   messages come from) → otherwise 401 `InvalidAuthenticationInfo` "Lifetime validation
//!   failed. The token is expired." / "… is not yet valid.";
//! * `aud` (a string or an array of strings) contains a storage audience: `https://storage.azure.com`
//!   (with or without trailing `/`), the Azure Storage application id
//!   `e406a681-f3d4-42a8-90b6-c2b029497af1`, or `https://{account}.table.{suffix}` for the
//!   account addressed (case-insensitive, optional trailing `/`) with suffix one of
//!   `core.windows.net`, `core.chinacloudapi.cn`, `core.usgovcloudapi.net`,
//!   `core.cloudapi.de`; otherwise → 401 "Audience validation failed. Audience did not match."
//!   (the real service's text).
//! * `iss` is a Microsoft Entra ID issuer for some tenant: `https://sts.windows.net/{tenant}/`
//!   (v1 tokens, public and US Government clouds), `https://sts.chinacloudapi.cn/{tenant}/`,
//!   `https://sts.microsoftonline.de/{tenant}/` (v1, 21Vianet and the retired German cloud),
//!   or `https://{authority}/{tenant}/v2.0` with authority `login.microsoftonline.com`,
//!   `login.microsoftonline.us` or `login.partner.microsoftonline.cn` (v2 tokens), or
//!   Microsoft's pre-production Entra ID, `https://sts.windows-ppe.net/{tenant}` with or
//!   without the trailing `/` (every token in Azurite's docs and tests has it, and Azurite
//!   accepts it); otherwise → 401 "Issuer validation failed. Issuer did not match." (the real
//!   service's text).
//!
//! **What is not checked**: the signature (no keys are fetched; anyone can mint a token), which
//! tenant, scopes/roles (`scp`, `roles`) and any RBAC assignment, `iat`, `alg`
//! values (even `none` is accepted), `x-ms-date` and its skew. A valid token authorizes every
//! operation on the addressed account (see [`Principal::authorize`](super::Principal::authorize)).
//!
//! Depends on nothing else in the crate.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde_json::Value;

use super::error::{AuthError, AuthFailure};
use super::RequestView;

/// Allowed clock skew on `nbf`/`exp`.
pub(crate) const BEARER_CLOCK_SKEW_SECONDS: i64 = 300;

/// Azure Storage's application id, an accepted audience.
pub const STORAGE_APP_ID: &str = "e406a681-f3d4-42a8-90b6-c2b029497af1";

const TABLE_SUFFIXES: [&str; 4] = [
    "core.windows.net",
    "core.chinacloudapi.cn",
    "core.usgovcloudapi.net",
    "core.cloudapi.de",
];

/// Claims of an accepted token that the server may want to log or expose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BearerClaims {
    /// The audience that matched.
    pub(crate) audience: String,
    /// `iss`: an Entra ID issuer (see [`is_entra_issuer`]).
    pub(crate) issuer: Option<String>,
    /// `sub`.
    pub(crate) subject: Option<String>,
    /// `oid`.
    pub(crate) object_id: Option<String>,
    /// `tid`.
    pub(crate) tenant_id: Option<String>,
    /// `appid` (v1 tokens) or `azp` (v2 tokens).
    pub(crate) app_id: Option<String>,
    /// `exp`.
    pub(crate) expires_at: DateTime<Utc>,
    /// `nbf`, if present.
    pub(crate) not_before: Option<DateTime<Utc>>,
}

fn malformed() -> AuthError {
    AuthError::malformed_header("The bearer token is not a well-formed JWT.")
}

fn decode_part(part: &str) -> Option<serde_json::Map<String, Value>> {
    let trimmed = part.trim_end_matches('=');
    let bytes = URL_SAFE_NO_PAD.decode(trimmed).ok()?;
    match serde_json::from_slice::<Value>(&bytes).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

fn numeric_time(value: &Value) -> Option<DateTime<Utc>> {
    let seconds = value
        .as_i64()
        .or_else(|| value.as_f64().map(|f| f as i64))?;
    DateTime::from_timestamp(seconds, 0)
}

fn string_claim(payload: &serde_json::Map<String, Value>, name: &str) -> Option<String> {
    payload
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// `true` when `audience` names Azure Storage or this account's table endpoint.
pub(crate) fn is_storage_audience(audience: &str, account: &str) -> bool {
    let audience = audience.strip_suffix('/').unwrap_or(audience);
    if audience.eq_ignore_ascii_case("https://storage.azure.com")
        || audience.eq_ignore_ascii_case(STORAGE_APP_ID)
    {
        return true;
    }
    let lower = audience.to_ascii_lowercase();
    let Some(host) = lower.strip_prefix("https://") else {
        return false;
    };
    let account = account.to_ascii_lowercase();
    let Some(rest) = host.strip_prefix(account.as_str()) else {
        return false;
    };
    let Some(suffix) = rest.strip_prefix(".table.") else {
        return false;
    };
    TABLE_SUFFIXES.contains(&suffix)
}

/// v1 issuers, `{prefix}{tenant}/`.
const V1_ISSUER_PREFIXES: [&str; 3] = [
    "https://sts.windows.net/",
    "https://sts.chinacloudapi.cn/",
    "https://sts.microsoftonline.de/",
];

/// v2 issuers, `{prefix}{tenant}/v2.0`.
const V2_ISSUER_PREFIXES: [&str; 3] = [
    "https://login.microsoftonline.com/",
    "https://login.microsoftonline.us/",
    "https://login.partner.microsoftonline.cn/",
];

/// Microsoft's pre-production Entra ID (PPE), `{prefix}{tenant}` with or without a trailing
/// `/`: Azurite lists it among its valid issuers (`src/common/utils/constants.ts`), and the
/// example token of its docs and every token of its test suite use it.
const PPE_ISSUER_PREFIX: &str = "https://sts.windows-ppe.net/";

/// `true` when `issuer` is a Microsoft Entra ID token issuer (global, sovereign or
/// pre-production cloud, v1 or v2 form) for some tenant. The tenant is one non-empty path
/// segment.
pub(crate) fn is_entra_issuer(issuer: &str) -> bool {
    let tenant_ok = |t: &str| !t.is_empty() && !t.contains('/');
    let v1 = V1_ISSUER_PREFIXES.iter().any(|p| {
        issuer
            .strip_prefix(p)
            .and_then(|rest| rest.strip_suffix('/'))
            .is_some_and(tenant_ok)
    });
    let v2 = V2_ISSUER_PREFIXES.iter().any(|p| {
        issuer
            .strip_prefix(p)
            .and_then(|rest| rest.strip_suffix("/v2.0"))
            .is_some_and(tenant_ok)
    });
    let ppe = issuer
        .strip_prefix(PPE_ISSUER_PREFIX)
        .map(|rest| rest.strip_suffix('/').unwrap_or(rest))
        .is_some_and(tenant_ok);
    v1 || v2 || ppe
}

/// Validates a bearer token for `req` (see the module notes for exactly what is checked).
pub(crate) fn authenticate_bearer(
    req: &RequestView<'_>,
    token: &str,
) -> Result<BearerClaims, AuthError> {
    if !req.is_https {
        return Err(AuthError::AuthenticationFailed(AuthFailure::BearerOverHttp));
    }
    let parts: Vec<&str> = token.trim().split('.').collect();
    let [header, payload, _signature] = parts.as_slice() else {
        return Err(malformed());
    };
    let header = decode_part(header).ok_or_else(malformed)?;
    if !header.get("alg").is_some_and(Value::is_string) {
        return Err(malformed());
    }
    let payload = decode_part(payload).ok_or_else(malformed)?;
    let expires_at = payload
        .get("exp")
        .and_then(numeric_time)
        .ok_or_else(malformed)?;
    let not_before = match payload.get("nbf") {
        None => None,
        Some(v) => Some(numeric_time(v).ok_or_else(malformed)?),
    };

    let skew = chrono::Duration::seconds(BEARER_CLOCK_SKEW_SECONDS);
    if let Some(nbf) = not_before {
        if req.now + skew < nbf {
            return Err(AuthError::bearer_rejected(
                "Lifetime validation failed. The token is not yet valid.",
            ));
        }
    }
    if req.now >= expires_at + skew {
        return Err(AuthError::bearer_rejected(
            "Lifetime validation failed. The token is expired.",
        ));
    }

    let audiences: Vec<&str> = match payload.get("aud") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let audience = audiences
        .into_iter()
        .find(|a| is_storage_audience(a, req.account))
        .ok_or_else(|| {
            AuthError::bearer_rejected("Audience validation failed. Audience did not match.")
        })?;

    let issuer = string_claim(&payload, "iss")
        .filter(|iss| is_entra_issuer(iss))
        .ok_or_else(|| {
            AuthError::bearer_rejected("Issuer validation failed. Issuer did not match.")
        })?;

    Ok(BearerClaims {
        audience: audience.to_string(),
        issuer: Some(issuer),
        subject: string_claim(&payload, "sub"),
        object_id: string_claim(&payload, "oid"),
        tenant_id: string_claim(&payload, "tid"),
        app_id: string_claim(&payload, "appid").or_else(|| string_claim(&payload, "azp")),
        expires_at,
        not_before,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audiences() {
        for ok in [
            "https://storage.azure.com",
            "https://storage.azure.com/",
            "HTTPS://STORAGE.AZURE.COM",
            STORAGE_APP_ID,
            "https://acct.table.core.windows.net",
            "https://acct.table.core.windows.net/",
            "https://ACCT.table.core.chinacloudapi.cn",
        ] {
            assert!(is_storage_audience(ok, "acct"), "{ok}");
        }
        for bad in [
            "https://other.table.core.windows.net",
            "https://acct.blob.core.windows.net",
            "https://acct.table.example.com",
            "https://management.azure.com",
            "http://storage.azure.com",
            "https://acctx.table.core.windows.net",
            "",
        ] {
            assert!(!is_storage_audience(bad, "acct"), "{bad}");
        }
    }

    #[test]
    fn issuers() {
        for ok in [
            "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/",
            "https://sts.chinacloudapi.cn/tid/",
            "https://sts.microsoftonline.de/tid/",
            "https://login.microsoftonline.com/tid/v2.0",
            "https://login.microsoftonline.us/tid/v2.0",
            "https://login.partner.microsoftonline.cn/tid/v2.0",
            "https://sts.windows-ppe.net/ab1f708d-50f6-404c-a006-d71b2ac7a606/",
            "https://sts.windows-ppe.net/ab1f708d-50f6-404c-a006-d71b2ac7a606",
        ] {
            assert!(is_entra_issuer(ok), "{ok}");
        }
        for bad in [
            "https://sts.windows.net/",
            "https://sts.windows.net//",
            "https://sts.windows.net/tid",
            "https://sts.windows.net/a/b/",
            "https://login.microsoftonline.com/tid/",
            "https://login.microsoftonline.com/tid/v2.0/",
            "https://sts.windows.net.evil.example/tid/",
            "http://sts.windows.net/tid/",
            "https://accounts.google.com",
            "https://issuer.example/tid/v2.0",
            "https://invalidissuer/ab1f708d-50f6-404c-a006-d71b2ac7a606/",
            "https://sts.windows-ppe.net/",
            "https://sts.windows-ppe.net",
            "https://sts.windows-ppe.net//tid/",
            "https://sts.windows-ppe.net/a/b/",
            "https://sts.windows-ppe.net.evil.example/tid/",
            "",
        ] {
            assert!(!is_entra_issuer(bad), "{bad}");
        }
    }
}
