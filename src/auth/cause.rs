//! Why a request was refused, in one sentence for the server's log. The wire keeps Azure's
//! answer (most refusals are 403 `AuthenticationFailed` with the same text, as Azure sends
//! them), so the log is where a developer finds out which of the many reasons it was:
//! the wrong key, the clock, an expired SAS, a permission the SAS lacks, …
//!
//! Nothing here is sent to a client. The string-to-sign of a signature that did not match is
//! not part of the sentence: [`AuthError::string_to_sign`] gives it to the debug log.
//!
//! Depends on nothing else in the crate.

use chrono::{DateTime, Utc};

use super::authz::AuthzOperation;
use super::error::{AuthError, AuthFailure, InvalidAuthInfo};
use super::sas::{SasGrant, SasKind};
use super::time::format_http_date;

/// The sentence for an authentication or authorization failure. `now` is the server's clock
/// (for a date that is too old or too new).
pub(crate) fn cause(error: &AuthError, now: DateTime<Utc>) -> String {
    match error {
        AuthError::AuthenticationFailed(reason) => failure(reason, now),
        AuthError::InvalidAuthenticationInfo(InvalidAuthInfo::MalformedHeader { detail }) => {
            format!("malformed Authorization header or credentials: {detail}")
        }
        AuthError::InvalidAuthenticationInfo(InvalidAuthInfo::BearerTokenRejected { detail }) => {
            format!("bearer token rejected: {detail}")
        }
        AuthError::AuthorizationFailure => "the SAS does not allow this request: another table \
             than its tn, a table, ACL or service operation through a service SAS, or keys \
             outside its key range"
            .to_string(),
        AuthError::AuthorizationPermissionMismatch => {
            "the SAS's permissions (sp) lack the one this operation needs".to_string()
        }
        AuthError::AuthorizationResourceTypeMismatch => {
            "the account SAS's resource types (srt) do not cover this operation".to_string()
        }
        AuthError::AuthorizationServiceMismatch => {
            "the account SAS's services (ss) do not include t (Table)".to_string()
        }
        AuthError::AuthorizationSourceIPMismatch { source_ip } => match source_ip {
            Some(ip) => format!("the client address {ip} is outside the SAS's sip range"),
            None => "the client address is unknown and the SAS names a sip range".to_string(),
        },
        AuthError::AuthorizationProtocolMismatch => {
            "the SAS allows HTTPS only (spr=https) and the request came over HTTP".to_string()
        }
        AuthError::InsufficientAccountPermissions => {
            "a write sent to the read-only -secondary endpoint".to_string()
        }
    }
}

/// [`cause`] for a refusal of an authenticated SAS, with what the grant says: which table it
/// is for, which permissions it has and which one `op` needs.
pub(crate) fn sas_denial(
    error: &AuthError,
    grant: &SasGrant,
    op: AuthzOperation,
    table: Option<&str>,
    now: DateTime<Utc>,
) -> String {
    let sp = grant.permissions.letters();
    match (error, grant.kind) {
        (AuthError::AuthorizationFailure, SasKind::Service) => {
            let tn = grant.table_name.as_deref().unwrap_or("");
            match table {
                Some(t) if !t.eq_ignore_ascii_case(tn) => {
                    format!("the service SAS is for table '{tn}' (tn), not '{t}'")
                }
                _ => format!(
                    "a service SAS (for table '{tn}') opens that table's entities only; \
                     {op:?} needs an account SAS or the account key"
                ),
            }
        }
        (AuthError::AuthorizationFailure, SasKind::Account) => {
            format!("{op:?} is never allowed through a SAS; use the account key")
        }
        (AuthError::AuthorizationPermissionMismatch, _) => format!(
            "the SAS's permissions sp={sp} lack what {op:?} needs ({})",
            op.needed_permission()
        ),
        _ => cause(error, now),
    }
}

fn failure(reason: &AuthFailure, now: DateTime<Utc>) -> String {
    match reason {
        AuthFailure::Anonymous => "no credentials: neither an Authorization header nor a SAS \
             signature (sig) in the query"
            .to_string(),
        AuthFailure::UnknownAccount { account } => {
            format!("account '{account}' is not configured on this server")
        }
        AuthFailure::AccountMismatch { header_account } => format!(
            "the Authorization header signs for account '{header_account}', not the account \
             the URL addresses"
        ),
        AuthFailure::SignatureMismatch { .. } => "signature mismatch: the Shared Key signature \
             is not the one the account key gives (a wrong key, or the request changed after \
             it was signed); the string-to-sign the server computed is logged at debug level"
            .to_string(),
        AuthFailure::SasSignatureMismatch { .. } => "SAS signature mismatch: sig is not the one \
             the account key gives for these SAS fields (a wrong key, or a field changed after \
             signing); the string-to-sign the server computed is logged at debug level"
            .to_string(),
        AuthFailure::UnsupportedScheme { scheme } => format!(
            "Authorization scheme '{scheme}' is not supported here (SharedKey, SharedKeyLite, \
             or Bearer with --oauth)"
        ),
        AuthFailure::DateHeaderMissing => {
            "neither x-ms-date nor Date is set on a Shared Key request".to_string()
        }
        AuthFailure::DateHeaderInvalid => {
            "the x-ms-date (or Date) header is not an RFC 1123 date".to_string()
        }
        AuthFailure::DateHeaderTooOld { date } => format!(
            "clock skew: the request is dated {}, more than 15 minutes before the server's \
             clock ({})",
            format_http_date(*date),
            format_http_date(now)
        ),
        AuthFailure::DateHeaderInFuture { date } => format!(
            "clock skew: the request is dated {}, more than 15 minutes after the server's \
             clock ({})",
            format_http_date(*date),
            format_http_date(now)
        ),
        AuthFailure::SasFieldMalformed { detail } => format!("malformed SAS: {detail}"),
        AuthFailure::SasExpiryBeforeStart { start, expiry } => format!(
            "the SAS expires (se={}) before it starts (st={})",
            format_http_date(*expiry),
            format_http_date(*start)
        ),
        AuthFailure::SasNotValidInTimeFrame { start, expiry, now } => {
            if now < start {
                format!(
                    "the SAS is not valid yet: it starts at {} (st) and the server's clock \
                     says {}",
                    format_http_date(*start),
                    format_http_date(*now)
                )
            } else {
                format!(
                    "the SAS has expired: it ended at {} (se) and the server's clock says {}",
                    format_http_date(*expiry),
                    format_http_date(*now)
                )
            }
        }
        AuthFailure::PolicyNotFound { identifier } => format!(
            "the SAS names stored access policy '{identifier}' (si), which the table does not have"
        ),
        AuthFailure::PolicyFieldConflict => {
            "the SAS and its stored access policy both set st, se or sp".to_string()
        }
        AuthFailure::PolicyExpiryMissing => {
            "neither the SAS nor its stored access policy sets an expiry (se)".to_string()
        }
        AuthFailure::PolicyPermissionMissing => {
            "neither the SAS nor its stored access policy sets permissions (sp)".to_string()
        }
        AuthFailure::BearerOverHttp => {
            "a bearer token over plain HTTP: tokens need HTTPS (--cert)".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn each_time_cause_names_the_dates() {
        let now = at("2024-05-03T10:00:00Z");
        let old = AuthError::AuthenticationFailed(AuthFailure::DateHeaderTooOld {
            date: at("2024-05-03T09:00:00Z"),
        });
        let text = cause(&old, now);
        assert!(text.starts_with("clock skew"), "{text}");
        assert!(
            text.contains("09:00:00 GMT") && text.contains("10:00:00 GMT"),
            "{text}"
        );
        let expired = AuthFailure::SasNotValidInTimeFrame {
            start: at("2024-05-01T00:00:00Z"),
            expiry: at("2024-05-02T00:00:00Z"),
            now,
        };
        let text = cause(&AuthError::AuthenticationFailed(expired), now);
        assert!(text.contains("has expired"), "{text}");
        let early = AuthFailure::SasNotValidInTimeFrame {
            start: at("2024-05-04T00:00:00Z"),
            expiry: at("2024-05-05T00:00:00Z"),
            now,
        };
        let text = cause(&AuthError::AuthenticationFailed(early), now);
        assert!(text.contains("not valid yet"), "{text}");
    }

    /// The sentence never carries the string-to-sign: that is for the debug log only.
    #[test]
    fn a_signature_mismatch_keeps_the_string_to_sign_out_of_the_sentence() {
        let e = AuthError::AuthenticationFailed(AuthFailure::SignatureMismatch {
            signature: "abc=".into(),
            string_to_sign: "GET\n\n\nSECRET-LOOKING\n/a/Tables".into(),
        });
        let text = cause(&e, Utc::now());
        assert!(text.starts_with("signature mismatch"), "{text}");
        assert!(!text.contains("SECRET-LOOKING"), "{text}");
        assert_eq!(
            e.string_to_sign(),
            Some("GET\n\n\nSECRET-LOOKING\n/a/Tables")
        );
    }
}
