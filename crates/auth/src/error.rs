//! `AuthError`: every way authentication or authorization can fail, each top-level variant
//! spelled exactly as the Azure error code it becomes (Azure docs: "Table service error codes", "Common REST API error codes").
//!
//! The wire message has two parts in Azure:
//!
//! * [`AuthError::message`]: the human text that goes into the error body (`odata.error` JSON
//!   `message.value`, or XML `<Message>`), before the server appends `\nRequestId:…\nTime:…`.
//! * [`AuthError::authentication_error_detail`]: the extra `<AuthenticationErrorDetail>` text
//!   Azure adds to XML error bodies (for example the string-to-sign it used). Azure does **not**
//!   put it into JSON bodies (recorded: Py `test_table_batch…test_new_invalid_key.json`, a
//!   403 `AuthenticationFailed` whose JSON message is only the base text).
//!
//! Detail texts were taken from responses of the real service found in public issues and from
//! the decompiled legacy storage emulator ("Nephos") sources that are public on GitHub; each
//! reason below says which. Depends on nothing else in the crate.

use std::fmt;
use std::net::IpAddr;

use chrono::{DateTime, Utc};

use super::time::format_http_date;

/// Why a request failed authentication or authorization. Variants map 1:1 to Azure codes
/// ([`code`](Self::code)); the status can depend on the reason (see [`status`](Self::status)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// `AuthenticationFailed` (403; 400 only for [`AuthFailure::PolicyFieldConflict`]).
    AuthenticationFailed(AuthFailure),
    /// `InvalidAuthenticationInfo` (400 for a malformed `Authorization` header, 401 for a
    /// rejected bearer token).
    InvalidAuthenticationInfo(InvalidAuthInfo),
    /// `AuthorizationFailure` (403): other SAS denials (wrong table, ACL or service operations
    /// through a service SAS, keys outside the SAS range).
    AuthorizationFailure,
    /// `AuthorizationPermissionMismatch` (403): `sp` lacks a needed permission.
    AuthorizationPermissionMismatch,
    /// `AuthorizationResourceTypeMismatch` (403): account SAS `srt` does not cover the operation.
    AuthorizationResourceTypeMismatch,
    /// `AuthorizationServiceMismatch` (403): account SAS `ss` lacks `t`.
    AuthorizationServiceMismatch,
    /// `AuthorizationSourceIPMismatch` (403): client address outside `sip`.
    AuthorizationSourceIPMismatch {
        /// The client address the server saw, if it knew one.
        source_ip: Option<IpAddr>,
    },
    /// `AuthorizationProtocolMismatch` (403): `spr=https` used over HTTP.
    AuthorizationProtocolMismatch,
    /// `InsufficientAccountPermissions` (403): a write sent to the read-only secondary endpoint.
    InsufficientAccountPermissions,
}

/// Reasons behind a 403 `AuthenticationFailed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthFailure {
    /// No `Authorization` header and no SAS `sig` parameter. Azure's answer is unverified
    /// (401 `NoAuthenticationInformation` is possible); we choose 403
    /// `AuthenticationFailed` [emu], without detail.
    Anonymous,
    /// The account is not configured here. [emu] (Azure never sees such a request; Azurite
    /// answers 404 `ResourceNotFound`.)
    UnknownAccount { account: String },
    /// The account named in `SharedKey {acct}:sig` is not the account addressed.
    AccountMismatch { header_account: String },
    /// Shared Key / Shared Key Lite signature did not match any key.
    SignatureMismatch {
        /// The signature as sent in the header.
        signature: String,
        /// The (primary) string-to-sign the server computed.
        string_to_sign: String,
    },
    /// SAS `sig` did not match any key.
    SasSignatureMismatch { string_to_sign: String },
    /// An `Authorization` scheme other than SharedKey, SharedKeyLite or Bearer.
    UnsupportedScheme { scheme: String },
    /// Neither `x-ms-date` nor `Date` on a Shared Key request.
    DateHeaderMissing,
    /// The governing date header is not an RFC 1123 date.
    DateHeaderInvalid,
    /// The request date is more than the allowed skew in the past.
    DateHeaderTooOld { date: DateTime<Utc> },
    /// The request date is more than the allowed skew in the future ([emu]; Azure's text for
    /// this case is unverified).
    DateHeaderInFuture { date: DateTime<Utc> },
    /// A SAS field is missing, empty or malformed; `detail` is the exact detail text.
    SasFieldMalformed { detail: String },
    /// `se` ≤ `st`.
    SasExpiryBeforeStart {
        start: DateTime<Utc>,
        expiry: DateTime<Utc>,
    },
    /// Now is outside `[st, se)`.
    SasNotValidInTimeFrame {
        start: DateTime<Utc>,
        expiry: DateTime<Utc>,
        now: DateTime<Utc>,
    },
    /// `si` names no stored access policy of the table.
    PolicyNotFound { identifier: String },
    /// A field (`st`, `se`, `sp`) is given by both the SAS and its stored access policy.
    /// Microsoft documents status 400 for this case; the legacy emulator raised
    /// `AuthenticationFailed`, so the code is that and the status 400 (unverified combination).
    PolicyFieldConflict,
    /// Neither the SAS nor its policy gives an expiry.
    PolicyExpiryMissing,
    /// Neither the SAS nor its policy gives permissions.
    PolicyPermissionMissing,
    /// Bearer token sent over plain HTTP (Azurite's wording; Azure's is unverified).
    BearerOverHttp,
}

/// Reasons behind `InvalidAuthenticationInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvalidAuthInfo {
    /// The `Authorization` header is syntactically malformed (400); `detail` is the exact
    /// detail text.
    MalformedHeader { detail: String },
    /// A bearer token was rejected (401); `detail` is the validation failure.
    BearerTokenRejected { detail: String },
}

/// Base text of `AuthenticationFailed`, as the real service sends it [rec: Py]. (The public
/// error-code table writes "the `Authorization` header"; the wire text has no "the".)
pub(crate) const AUTHENTICATION_FAILED_MESSAGE: &str = "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.";
/// Base text of a 400 `InvalidAuthenticationInfo`, as seen on the wire (Azure blob responses
/// quoted in Microsoft's container-registry troubleshooting page).
pub(crate) const INVALID_AUTHENTICATION_INFO_MESSAGE: &str =
    "Authentication information is not given in the correct format. Check the value of Authorization header.";
/// Base text of a 401 `InvalidAuthenticationInfo` (bearer token rejected), as seen on the wire.
pub(crate) const BEARER_REJECTED_MESSAGE: &str =
    "Server failed to authenticate the request. Please refer to the information in the www-authenticate header.";
/// `AuthorizationFailure`.
pub(crate) const AUTHORIZATION_FAILURE_MESSAGE: &str =
    "This request is not authorized to perform this operation.";
/// `AuthorizationPermissionMismatch`.
pub(crate) const PERMISSION_MISMATCH_MESSAGE: &str =
    "This request is not authorized to perform this operation using this permission.";
/// `AuthorizationResourceTypeMismatch`.
pub(crate) const RESOURCE_TYPE_MISMATCH_MESSAGE: &str =
    "This request is not authorized to perform this operation using this resource type.";
/// `AuthorizationServiceMismatch`.
pub(crate) const SERVICE_MISMATCH_MESSAGE: &str =
    "This request is not authorized to perform this operation using this service.";
/// `AuthorizationProtocolMismatch`.
pub(crate) const PROTOCOL_MISMATCH_MESSAGE: &str =
    "This request is not authorized to perform this operation using this protocol.";
/// `InsufficientAccountPermissions` (the general form in the common error-code table).
pub(crate) const INSUFFICIENT_ACCOUNT_PERMISSIONS_MESSAGE: &str =
    "The account being accessed does not have sufficient permissions to execute this operation.";

impl AuthError {
    /// The Azure error code (`x-ms-error-code`, `odata.error.code`).
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::AuthenticationFailed(_) => "AuthenticationFailed",
            AuthError::InvalidAuthenticationInfo(_) => "InvalidAuthenticationInfo",
            AuthError::AuthorizationFailure => "AuthorizationFailure",
            AuthError::AuthorizationPermissionMismatch => "AuthorizationPermissionMismatch",
            AuthError::AuthorizationResourceTypeMismatch => "AuthorizationResourceTypeMismatch",
            AuthError::AuthorizationServiceMismatch => "AuthorizationServiceMismatch",
            AuthError::AuthorizationSourceIPMismatch { .. } => "AuthorizationSourceIPMismatch",
            AuthError::AuthorizationProtocolMismatch => "AuthorizationProtocolMismatch",
            AuthError::InsufficientAccountPermissions => "InsufficientAccountPermissions",
        }
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        match self {
            AuthError::AuthenticationFailed(AuthFailure::PolicyFieldConflict) => 400,
            AuthError::InvalidAuthenticationInfo(InvalidAuthInfo::MalformedHeader { .. }) => 400,
            AuthError::InvalidAuthenticationInfo(InvalidAuthInfo::BearerTokenRejected {
                ..
            }) => 401,
            _ => 403,
        }
    }

    /// Azure's human message text, without the `RequestId`/`Time` lines the server appends.
    pub fn message(&self) -> String {
        match self {
            AuthError::AuthenticationFailed(_) => AUTHENTICATION_FAILED_MESSAGE.to_string(),
            AuthError::InvalidAuthenticationInfo(InvalidAuthInfo::MalformedHeader { .. }) => {
                INVALID_AUTHENTICATION_INFO_MESSAGE.to_string()
            }
            AuthError::InvalidAuthenticationInfo(InvalidAuthInfo::BearerTokenRejected {
                ..
            }) => BEARER_REJECTED_MESSAGE.to_string(),
            AuthError::AuthorizationFailure => AUTHORIZATION_FAILURE_MESSAGE.to_string(),
            AuthError::AuthorizationPermissionMismatch => PERMISSION_MISMATCH_MESSAGE.to_string(),
            AuthError::AuthorizationResourceTypeMismatch => {
                RESOURCE_TYPE_MISMATCH_MESSAGE.to_string()
            }
            AuthError::AuthorizationServiceMismatch => SERVICE_MISMATCH_MESSAGE.to_string(),
            // The SAS error-code table writes the template "{SourceIP}"; we substitute the
            // address (unverified whether Azure does; it keeps the message useful).
            AuthError::AuthorizationSourceIPMismatch { source_ip } => {
                let ip = source_ip.map_or_else(|| "{SourceIP}".to_string(), |ip| ip.to_string());
                format!("This request is not authorized to perform this operation using this source IP {ip}.")
            }
            AuthError::AuthorizationProtocolMismatch => PROTOCOL_MISMATCH_MESSAGE.to_string(),
            AuthError::InsufficientAccountPermissions => {
                INSUFFICIENT_ACCOUNT_PERMISSIONS_MESSAGE.to_string()
            }
        }
    }

    /// The `<AuthenticationErrorDetail>` text Azure adds to XML error bodies, if any.
    pub fn authentication_error_detail(&self) -> Option<String> {
        match self {
            AuthError::AuthenticationFailed(reason) => reason.detail(),
            AuthError::InvalidAuthenticationInfo(
                InvalidAuthInfo::MalformedHeader { detail }
                | InvalidAuthInfo::BearerTokenRejected { detail },
            ) => Some(detail.clone()),
            _ => None,
        }
    }

    /// The string-to-sign the server computed, when the failure was a signature mismatch (handy
    /// for logs: Azure only ever shows it in the XML detail).
    pub fn string_to_sign(&self) -> Option<&str> {
        match self {
            AuthError::AuthenticationFailed(
                AuthFailure::SignatureMismatch { string_to_sign, .. }
                | AuthFailure::SasSignatureMismatch { string_to_sign },
            ) => Some(string_to_sign),
            _ => None,
        }
    }

    /// Value for a `WWW-Authenticate` response header: Azure sends a bearer challenge with its
    /// 401 answers. The tenant is not knowable here, so the `common` authority is used [emu].
    pub fn www_authenticate(&self) -> Option<String> {
        match self {
            AuthError::InvalidAuthenticationInfo(InvalidAuthInfo::BearerTokenRejected {
                ..
            }) => Some(
                "Bearer authorization_uri=https://login.microsoftonline.com/common/oauth2/authorize resource_id=https://storage.azure.com"
                    .to_string(),
            ),
            _ => None,
        }
    }

    /// `true` for the anonymous-request case (no credentials at all).
    #[cfg(test)]
    pub(crate) fn is_anonymous(&self) -> bool {
        matches!(
            self,
            AuthError::AuthenticationFailed(AuthFailure::Anonymous)
        )
    }

    pub(crate) fn sas_field(detail: impl Into<String>) -> Self {
        AuthError::AuthenticationFailed(AuthFailure::SasFieldMalformed {
            detail: detail.into(),
        })
    }

    pub(crate) fn malformed_header(detail: impl Into<String>) -> Self {
        AuthError::InvalidAuthenticationInfo(InvalidAuthInfo::MalformedHeader {
            detail: detail.into(),
        })
    }

    pub(crate) fn bearer_rejected(detail: impl Into<String>) -> Self {
        AuthError::InvalidAuthenticationInfo(InvalidAuthInfo::BearerTokenRejected {
            detail: detail.into(),
        })
    }
}

impl AuthFailure {
    /// The `<AuthenticationErrorDetail>` text for this reason, when Azure sends one.
    pub(crate) fn detail(&self) -> Option<String> {
        Some(match self {
            // No detail text is known for these; send none rather than invent one.
            AuthFailure::Anonymous
            | AuthFailure::UnknownAccount { .. }
            | AuthFailure::AccountMismatch { .. } => return None,
            // Real service (public issue traces) and legacy emulator agree on this text.
            AuthFailure::SignatureMismatch {
                signature,
                string_to_sign,
            } => format!(
                "The MAC signature found in the HTTP request '{signature}' is not the same as any computed signature. Server used following string to sign: '{string_to_sign}'."
            ),
            // Real service: "Signature did not match. String to sign used was <sts>".
            AuthFailure::SasSignatureMismatch { string_to_sign } => {
                format!("Signature did not match. String to sign used was {string_to_sign}")
            }
            // Legacy emulator texts.
            AuthFailure::UnsupportedScheme { scheme } => {
                format!("Authentication scheme {scheme} is not supported")
            }
            AuthFailure::DateHeaderMissing => "Request date header not specified".to_string(),
            AuthFailure::DateHeaderInvalid => {
                "The Date header in the request is incorrect.".to_string()
            }
            // Real service: "Request date header too old: 'Fri, 31 Jan 2020 12:28:37 GMT'".
            AuthFailure::DateHeaderTooOld { date } => {
                format!("Request date header too old: '{}'", format_http_date(*date))
            }
            AuthFailure::DateHeaderInFuture { date } => format!(
                "Request date header is in the future: '{}'",
                format_http_date(*date)
            ),
            AuthFailure::SasFieldMalformed { detail } => detail.clone(),
            AuthFailure::SasExpiryBeforeStart { start, expiry } => format!(
                "Signed expiry time [{}] has to be after signed start time [{}]",
                format_http_date(*expiry),
                format_http_date(*start)
            ),
            // Real service: "Signature not valid in the specified time frame: Start [...] -
            // Expiry [...] - Current [...]".
            AuthFailure::SasNotValidInTimeFrame { start, expiry, now } => format!(
                "Signature not valid in the specified time frame: Start [{}] - Expiry [{}] - Current [{}]",
                format_http_date(*start),
                format_http_date(*expiry),
                format_http_date(*now)
            ),
            AuthFailure::PolicyNotFound { .. } => {
                "SAS identifier cannot be found for specified signed identifier".to_string()
            }
            AuthFailure::PolicyFieldConflict => {
                "Access policy fields can be associated with signature or SAS identifier but not both"
                    .to_string()
            }
            AuthFailure::PolicyExpiryMissing => {
                "Signed expiry must be specified in signature or SAS identifier".to_string()
            }
            AuthFailure::PolicyPermissionMissing => {
                "Signed permission must be specified in signature or SAS identifier".to_string()
            }
            AuthFailure::BearerOverHttp => {
                "Authentication scheme Bearer is not allowed with HTTP.".to_string()
            }
        })
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.code(), self.status(), self.message())?;
        if let Some(detail) = self.authentication_error_detail() {
            write!(f, " [{detail}]")?;
        }
        Ok(())
    }
}

impl std::error::Error for AuthError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_statuses_and_messages() {
        let cases: Vec<(AuthError, &str, u16, &str)> = vec![
            (
                AuthError::AuthenticationFailed(AuthFailure::Anonymous),
                "AuthenticationFailed",
                403,
                AUTHENTICATION_FAILED_MESSAGE,
            ),
            (
                AuthError::AuthenticationFailed(AuthFailure::PolicyFieldConflict),
                "AuthenticationFailed",
                400,
                AUTHENTICATION_FAILED_MESSAGE,
            ),
            (
                AuthError::malformed_header("x"),
                "InvalidAuthenticationInfo",
                400,
                INVALID_AUTHENTICATION_INFO_MESSAGE,
            ),
            (
                AuthError::bearer_rejected("x"),
                "InvalidAuthenticationInfo",
                401,
                BEARER_REJECTED_MESSAGE,
            ),
            (
                AuthError::AuthorizationFailure,
                "AuthorizationFailure",
                403,
                "This request is not authorized to perform this operation.",
            ),
            (
                AuthError::AuthorizationPermissionMismatch,
                "AuthorizationPermissionMismatch",
                403,
                "This request is not authorized to perform this operation using this permission.",
            ),
            (
                AuthError::AuthorizationResourceTypeMismatch,
                "AuthorizationResourceTypeMismatch",
                403,
                "This request is not authorized to perform this operation using this resource type.",
            ),
            (
                AuthError::AuthorizationServiceMismatch,
                "AuthorizationServiceMismatch",
                403,
                "This request is not authorized to perform this operation using this service.",
            ),
            (
                AuthError::AuthorizationProtocolMismatch,
                "AuthorizationProtocolMismatch",
                403,
                "This request is not authorized to perform this operation using this protocol.",
            ),
            (
                AuthError::AuthorizationSourceIPMismatch {
                    source_ip: Some("10.1.2.3".parse().unwrap()),
                },
                "AuthorizationSourceIPMismatch",
                403,
                "This request is not authorized to perform this operation using this source IP 10.1.2.3.",
            ),
            (
                AuthError::InsufficientAccountPermissions,
                "InsufficientAccountPermissions",
                403,
                INSUFFICIENT_ACCOUNT_PERMISSIONS_MESSAGE,
            ),
        ];
        for (error, code, status, message) in cases {
            assert_eq!(error.code(), code, "{error:?}");
            assert_eq!(error.status(), status, "{error:?}");
            assert_eq!(error.message(), message, "{error:?}");
        }
    }

    #[test]
    fn signature_mismatch_detail_wording() {
        let e = AuthError::AuthenticationFailed(AuthFailure::SignatureMismatch {
            signature: "abc=".into(),
            string_to_sign: "GET\n\n\nd\n/a/b".into(),
        });
        assert_eq!(
            e.authentication_error_detail().unwrap(),
            "The MAC signature found in the HTTP request 'abc=' is not the same as any computed signature. Server used following string to sign: 'GET\n\n\nd\n/a/b'."
        );
        assert_eq!(e.string_to_sign(), Some("GET\n\n\nd\n/a/b"));
        assert!(e.to_string().contains("AuthenticationFailed (403)"));
    }

    #[test]
    fn time_frame_detail_uses_rfc1123() {
        let t = |s: &str| DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc);
        let e = AuthFailure::SasNotValidInTimeFrame {
            start: t("2019-06-13T16:18:07Z"),
            expiry: t("2019-06-14T16:23:07Z"),
            now: t("2019-06-13T09:22:53Z"),
        };
        assert_eq!(
            e.detail().unwrap(),
            "Signature not valid in the specified time frame: Start [Thu, 13 Jun 2019 16:18:07 GMT] - Expiry [Fri, 14 Jun 2019 16:23:07 GMT] - Current [Thu, 13 Jun 2019 09:22:53 GMT]"
        );
    }

    #[test]
    fn bearer_rejection_has_challenge() {
        assert!(AuthError::bearer_rejected("x").www_authenticate().is_some());
        assert!(AuthError::AuthorizationFailure.www_authenticate().is_none());
        assert!(AuthError::AuthenticationFailed(AuthFailure::Anonymous).is_anonymous());
    }
}
