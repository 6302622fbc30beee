//! Authentication and authorization for the Table service, as pure functions over a
//! [`RequestView`] the server fills in (Azure docs: "Authorize requests to Azure Storage").
//!
//! Layout:
//!
//! * [`canonical`]: string-to-sign builders and the HMAC (no keys, no I/O);
//! * [`shared_key`]: `SharedKey` / `SharedKeyLite` header verification;
//! * [`sas`]: service and account SAS verification, stored-policy merge, [`SasGrant`], key ranges;
//! * [`bearer`]: structural bearer-token checks (no signature verification);
//! * [`authz`]: [`AuthzOperation`] and [`Principal::authorize`];
//! * [`accounts`]: configured accounts and keys; [`acl`]: the `SignedIdentifiers` XML codec;
//! * [`error`]: [`AuthError`], one variant per Azure code; [`cause`]: why a request was
//!   refused, in a sentence for the server's log.
//!
//! Order of evaluation (Azure docs: "Authorize requests to Azure Storage"): an `Authorization` header selects
//! SharedKey, SharedKeyLite or Bearer; otherwise a `sig` query parameter selects SAS (account
//! SAS when `ss` or `srt` is present, service SAS otherwise); otherwise the request is
//! anonymous, which is an error here (CORS preflight is the server's business before calling
//! in). A request with both an `Authorization` header and a `sig` is refused with 400
//! `InvalidAuthenticationInfo`: "The REST API doesn't allow two types of authentication to be
//! used when making requests" (azure-sdk-for-net #46263, where the service answered a SAS URL
//! sent with a token with that error's text).
//!
//! This module depends on nothing else in the crate.

pub mod accounts;
pub(crate) mod acl;
pub(crate) mod authz;
pub mod bearer;
pub mod canonical;
pub(crate) mod cause;
pub(crate) mod error;
pub(crate) mod live;
pub(crate) mod sas;
pub(crate) mod shared_key;
pub mod time;

use std::net::IpAddr;

use chrono::{DateTime, Utc};

pub use accounts::{AccountKeys, Accounts, AccountsError};
pub use acl::{
    decode_signed_identifiers, encode_signed_identifiers, AccessPolicy, AclError, SignedIdentifier,
};
pub use authz::AuthzOperation;
pub(crate) use bearer::BearerClaims;
pub use error::{AuthError, AuthFailure, InvalidAuthInfo};
pub use sas::{
    IpRange, ResourceTypes, SasGrant, SasKeyBound, SasKeyRange, SasKind, SasPermissions,
    SasProtocol, Services,
};
pub(crate) use shared_key::SharedKeyScheme;

/// What authentication needs to know about a request. The server fills it in from the raw
/// request; nothing here is decoded or normalised beforehand.
#[derive(Debug, Clone, Copy)]
pub struct RequestView<'a> {
    /// The method as on the wire (`POST` for a tunnelled `X-HTTP-Method`).
    pub method: &'a str,
    /// The path exactly as on the request line, still percent-encoded; in path style it
    /// includes the account segment (`/devstoreaccount1/Tables`).
    pub raw_path: &'a str,
    /// The raw query string (without `?`), if any.
    pub raw_query: Option<&'a str>,
    pub headers: &'a http::HeaderMap,
    /// The resolved account (without `-secondary`).
    pub account: &'a str,
    /// `true` when the account came from the first path segment.
    pub path_style: bool,
    pub is_https: bool,
    pub client_ip: Option<IpAddr>,
    /// The server's clock for this request (injected so tests are deterministic).
    pub now: DateTime<Utc>,
}

/// Who the request is, once authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// Shared Key or Shared Key Lite with an account key: the account owner.
    SharedKey { account: String },
    /// A verified SAS; [`SasGrant`] says what it allows.
    Sas(SasGrant),
    /// A bearer token that passed the structural checks of [`bearer`].
    Bearer {
        account: String,
        claims: BearerClaims,
    },
}

/// Resolves stored access policies (`si`) from the table's ACL. `table` is the SAS `tn` as
/// given; implementations should match it case-insensitively, as table names are.
pub trait PolicyLookup {
    fn policy(&self, account: &str, table: &str, id: &str) -> Option<AccessPolicy>;
}

/// A [`PolicyLookup`] that knows no policies (every `si` fails with
/// "SAS identifier cannot be found…").
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NoPolicies;

impl PolicyLookup for NoPolicies {
    fn policy(&self, _account: &str, _table: &str, _id: &str) -> Option<AccessPolicy> {
        None
    }
}

impl<F> PolicyLookup for F
where
    F: Fn(&str, &str, &str) -> Option<AccessPolicy>,
{
    fn policy(&self, account: &str, table: &str, id: &str) -> Option<AccessPolicy> {
        self(account, table, id)
    }
}

/// Switches for [`authenticate_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthOptions {
    /// Maximum distance between the request's `x-ms-date`/`Date` and `now` for Shared Key
    /// requests; `None` turns the check off. Default: 15 minutes, as Azure.
    pub(crate) max_clock_skew: Option<chrono::Duration>,
    /// Accept `Authorization: Bearer` tokens at all. Default: `true`.
    pub(crate) allow_bearer: bool,
}

impl Default for AuthOptions {
    fn default() -> Self {
        AuthOptions {
            max_clock_skew: Some(chrono::Duration::minutes(15)),
            allow_bearer: true,
        }
    }
}

/// Authenticates with default options and no stored access policies.
pub fn authenticate(req: &RequestView<'_>, accounts: &Accounts) -> Result<Principal, AuthError> {
    authenticate_with(req, accounts, &NoPolicies, &AuthOptions::default())
}

/// Authenticates a request: Shared Key / Shared Key Lite / Bearer from the `Authorization`
/// header, else a service or account SAS from the query, else
/// `AuthenticationFailed(Anonymous)`.
pub fn authenticate_with(
    req: &RequestView<'_>,
    accounts: &Accounts,
    policies: &dyn PolicyLookup,
    options: &AuthOptions,
) -> Result<Principal, AuthError> {
    let keys = accounts.get(req.account);
    let query = req.raw_query.unwrap_or("");
    let pairs = canonical::parse_query(query);
    let params = sas::SasParams::new(&pairs);
    let mut auth_headers = req.headers.get_all(http::header::AUTHORIZATION).iter();
    if let Some(value) = auth_headers.next() {
        if params.has("sig") {
            return Err(AuthError::malformed_header(
                "The request has both a shared access signature and an Authorization header; only one may be used.",
            ));
        }
        if auth_headers.next().is_some() {
            return Err(AuthError::malformed_header(
                "Duplicate authorization headers found",
            ));
        }
        let value = value.to_str().map_err(|_| {
            AuthError::malformed_header("The Authorization header is not valid ASCII.")
        })?;
        return authenticate_header(req, value, keys, options);
    }

    if params.has("sig") {
        let keys = keys.ok_or_else(|| unknown_account(req))?;
        sas::check_fields_given_once(&pairs)?;
        let grant = if params.has("ss") || params.has("srt") {
            sas::authenticate_account_sas(req, &params, keys)?
        } else {
            sas::authenticate_service_sas(req, &params, keys, policies)?
        };
        return Ok(Principal::Sas(grant));
    }
    Err(AuthError::AuthenticationFailed(AuthFailure::Anonymous))
}

fn unknown_account(req: &RequestView<'_>) -> AuthError {
    AuthError::AuthenticationFailed(AuthFailure::UnknownAccount {
        account: req.account.to_string(),
    })
}

fn authenticate_header(
    req: &RequestView<'_>,
    value: &str,
    keys: Option<&AccountKeys>,
    options: &AuthOptions,
) -> Result<Principal, AuthError> {
    let value = value.trim();
    let (scheme, params) = value.split_once(' ').unwrap_or((value, ""));
    let params = params.trim();
    if scheme.is_empty() || params.is_empty() {
        return Err(AuthError::malformed_header(format!(
            "Authorization value '{value}' is invalid."
        )));
    }
    // Scheme names are matched case-insensitively, as the service does.
    let shared_key_scheme = if scheme.eq_ignore_ascii_case("SharedKey") {
        Some(SharedKeyScheme::SharedKey)
    } else if scheme.eq_ignore_ascii_case("SharedKeyLite") {
        Some(SharedKeyScheme::SharedKeyLite)
    } else {
        None
    };
    if let Some(s) = shared_key_scheme {
        shared_key::authenticate_shared_key(req, s, params, keys, options)?;
        return Ok(Principal::SharedKey {
            account: req.account.to_string(),
        });
    }
    if scheme.eq_ignore_ascii_case("Bearer") && options.allow_bearer {
        let claims = bearer::authenticate_bearer(req, params)?;
        if keys.is_none() {
            return Err(unknown_account(req));
        }
        return Ok(Principal::Bearer {
            account: req.account.to_string(),
            claims,
        });
    }
    Err(AuthError::AuthenticationFailed(
        AuthFailure::UnsupportedScheme {
            scheme: scheme.to_string(),
        },
    ))
}

#[cfg(test)]
mod tests;
