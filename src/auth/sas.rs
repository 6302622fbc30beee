//! Shared access signatures for the Table service: parsing and verifying service SAS (Azure docs: "Create a service SAS")
//! and account SAS (Azure docs: "Create an account SAS") query parameters, merging stored access policies, and the resulting
//! [`SasGrant`] with its key-range helpers.
//!
//! Validation order: fields are parsed (a missing, empty or malformed field fails with 403
//! `AuthenticationFailed`), the signature is checked against every key, a stored policy named
//! by `si` is merged, the time window is checked, then the client address (`sip`) and the
//! protocol (`spr`). Operation-level checks (permissions, table, resource types) happen later
//! in [`Principal::authorize`](super::Principal::authorize).
//!
//! Detail texts for malformed fields follow the legacy storage emulator's SAS code (public,
//! decompiled), which mirrors the service. Depends on nothing else in the crate.

use std::net::IpAddr;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use chrono::{DateTime, Utc};
use subtle::ConstantTimeEq;

use super::accounts::AccountKeys;
use super::acl::AccessPolicy;
use super::canonical::{
    account_sas_string_to_sign, hmac_sha256, service_sas_string_to_sign, version_at_least,
    AccountSasFields, ServiceSasFields, SAS_VERSION_2012_02_12, SAS_VERSION_2015_04_05,
};
use super::error::{AuthError, AuthFailure};
use super::time::parse_iso8601;
use super::{PolicyLookup, RequestView};

/// Which kind of SAS granted access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SasKind {
    /// Table service SAS (`tn`, `sp` ⊆ `raud`, optional key range and stored policy).
    Service,
    /// Account SAS (`ss`, `srt`, `sp`).
    Account,
}

/// Permission letters of a SAS. A service SAS uses `r a u d`; an account SAS also `w l c p`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SasPermissions {
    /// `r`: query/get entities (account SAS: read service properties, stats).
    pub(crate) read: bool,
    /// `a`: insert entities.
    pub(crate) add: bool,
    /// `u`: update/merge entities.
    pub(crate) update: bool,
    /// `d`: delete entities (account SAS: also tables).
    pub(crate) delete: bool,
    /// `w` (account SAS): write service properties, create tables.
    pub(crate) write: bool,
    /// `l` (account SAS): list tables.
    pub(crate) list: bool,
    /// `c` (account SAS): create tables.
    pub(crate) create: bool,
    /// `p` (account SAS): process (queue messages; unused by tables).
    pub(crate) process: bool,
}

impl SasPermissions {
    /// The letters granted, in `rwdlacup` order (`-` for none), as the log names them.
    pub(crate) fn letters(&self) -> String {
        let flags = [
            (self.read, 'r'),
            (self.write, 'w'),
            (self.delete, 'd'),
            (self.list, 'l'),
            (self.add, 'a'),
            (self.create, 'c'),
            (self.update, 'u'),
            (self.process, 'p'),
        ];
        let letters: String = flags
            .iter()
            .filter(|(on, _)| *on)
            .map(|(_, c)| *c)
            .collect();
        if letters.is_empty() {
            "-".to_string()
        } else {
            letters
        }
    }

    /// Parses a table service SAS permission string: letters from `raud`, each at most once, in
    /// that order (Azure validates the order; the legacy emulator raised
    /// "Invalid order of permission").
    pub(crate) fn parse_table_ordered(text: &str) -> Option<Self> {
        Self::parse_table(text, true)
    }

    /// Parses `raud` letters in any order, each at most once (stored access policies).
    pub(crate) fn parse_table_any_order(text: &str) -> Option<Self> {
        Self::parse_table(text, false)
    }

    fn parse_table(text: &str, ordered: bool) -> Option<Self> {
        const ORDER: &str = "raud";
        let mut p = SasPermissions::default();
        let mut last: Option<usize> = None;
        for c in text.chars() {
            let index = ORDER.find(c)?;
            if ordered && last.is_some_and(|l| index <= l) {
                return None;
            }
            last = Some(index);
            let flag = match c {
                'r' => &mut p.read,
                'a' => &mut p.add,
                'u' => &mut p.update,
                _ => &mut p.delete,
            };
            if *flag {
                return None;
            }
            *flag = true;
        }
        Some(p)
    }

    /// Parses an account SAS permission string. Letters `r w d l a c u p` set the flags; the
    /// blob/file-only letters `y t f i x` are accepted and ignored; anything else, or a repeated
    /// letter, is an error. Any order is accepted [emu] (the value is signed as sent).
    pub(crate) fn parse_account(text: &str) -> Option<Self> {
        let mut p = SasPermissions::default();
        let mut seen = String::new();
        for c in text.chars() {
            if seen.contains(c) {
                return None;
            }
            seen.push(c);
            match c {
                'r' => p.read = true,
                'w' => p.write = true,
                'd' => p.delete = true,
                'l' => p.list = true,
                'a' => p.add = true,
                'c' => p.create = true,
                'u' => p.update = true,
                'p' => p.process = true,
                'y' | 't' | 'f' | 'i' | 'x' => {}
                _ => return None,
            }
        }
        Some(p)
    }
}

/// Account SAS `srt`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceTypes {
    /// `s`: service-level operations (properties, stats).
    pub(crate) service: bool,
    /// `c`: container-level operations (tables).
    pub(crate) container: bool,
    /// `o`: object-level operations (entities).
    pub(crate) object: bool,
}

impl ResourceTypes {
    /// Parses `srt` (letters `s c o`, any order, no repeats).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut r = ResourceTypes::default();
        for c in text.chars() {
            let flag = match c {
                's' => &mut r.service,
                'c' => &mut r.container,
                'o' => &mut r.object,
                _ => return None,
            };
            if *flag {
                return None;
            }
            *flag = true;
        }
        Some(r)
    }

    /// All three types (what a service SAS implicitly scopes is decided elsewhere).
    pub(crate) fn all() -> Self {
        ResourceTypes {
            service: true,
            container: true,
            object: true,
        }
    }
}

/// Account SAS `ss`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Services {
    pub(crate) blob: bool,
    pub(crate) queue: bool,
    pub(crate) table: bool,
    pub(crate) file: bool,
}

impl Services {
    /// Parses `ss` (letters `b q t f`, any order, no repeats).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut s = Services::default();
        for c in text.chars() {
            let flag = match c {
                'b' => &mut s.blob,
                'q' => &mut s.queue,
                't' => &mut s.table,
                'f' => &mut s.file,
                _ => return None,
            };
            if *flag {
                return None;
            }
            *flag = true;
        }
        Some(s)
    }

    /// Only the table service (what a table service SAS implies).
    pub(crate) fn table_only() -> Self {
        Services {
            table: true,
            ..Services::default()
        }
    }
}

/// `spr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SasProtocol {
    /// `spr=https`.
    HttpsOnly,
    /// `spr=https,http` (or `http,https`), or no `spr`.
    HttpsOrHttp,
}

impl SasProtocol {
    /// Parses `spr`; plain `http` is not allowed.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        match text {
            "https" => Some(SasProtocol::HttpsOnly),
            "https,http" | "http,https" => Some(SasProtocol::HttpsOrHttp),
            _ => None,
        }
    }
}

/// `sip`: one address or an inclusive range `a.b.c.d-e.f.g.h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRange {
    pub(crate) start: IpAddr,
    pub(crate) end: IpAddr,
}

impl IpRange {
    /// Parses `a.b.c.d` or `a.b.c.d-e.f.g.h` (IPv6 addresses are accepted too; both ends must
    /// be of the same family and in order).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let (start, end) = match text.split_once('-') {
            Some((a, b)) => (a.trim().parse().ok()?, b.trim().parse().ok()?),
            None => {
                let ip: IpAddr = text.trim().parse().ok()?;
                (ip, ip)
            }
        };
        let range = IpRange { start, end };
        match (start, end) {
            (IpAddr::V4(a), IpAddr::V4(b)) if a <= b => Some(range),
            (IpAddr::V6(a), IpAddr::V6(b)) if a <= b => Some(range),
            _ => None,
        }
    }

    /// `true` when `ip` lies in the range. IPv4-mapped IPv6 client addresses are compared as
    /// IPv4.
    pub(crate) fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.start, self.end, ip) {
            (IpAddr::V4(a), IpAddr::V4(b), IpAddr::V4(x)) => a <= x && x <= b,
            (IpAddr::V6(a), IpAddr::V6(b), IpAddr::V6(x)) => a <= x && x <= b,
            _ => false,
        }
    }
}

/// One end of a SAS key range: a partition key and, optionally, a row key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SasKeyBound {
    pub(crate) partition_key: String,
    pub(crate) row_key: Option<String>,
}

/// The entity range of a service SAS (Azure docs: "Create a service SAS"), all bounds inclusive:
///
/// | Fields | Allowed entities |
/// |---|---|
/// | `spk` | PK ≥ spk |
/// | `epk` | PK ≤ epk |
/// | `spk`,`srk` | PK > spk, or PK = spk and RK ≥ srk |
/// | `epk`,`erk` | PK < epk, or PK = epk and RK ≤ erk |
///
/// Keys compare as Rust strings (Unicode code-point order), the same order the store uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SasKeyRange {
    pub(crate) start: Option<SasKeyBound>,
    pub(crate) end: Option<SasKeyBound>,
}

impl SasKeyRange {
    /// `true` when no bound is set.
    pub(crate) fn is_unbounded(&self) -> bool {
        self.start.is_none() && self.end.is_none()
    }

    /// `true` when the entity `(partition_key, row_key)` lies inside the range.
    pub(crate) fn contains(&self, partition_key: &str, row_key: &str) -> bool {
        let after_start = match &self.start {
            None => true,
            Some(SasKeyBound {
                partition_key: spk,
                row_key: None,
            }) => partition_key >= spk.as_str(),
            Some(SasKeyBound {
                partition_key: spk,
                row_key: Some(srk),
            }) => {
                partition_key > spk.as_str()
                    || (partition_key == spk.as_str() && row_key >= srk.as_str())
            }
        };
        let before_end = match &self.end {
            None => true,
            Some(SasKeyBound {
                partition_key: epk,
                row_key: None,
            }) => partition_key <= epk.as_str(),
            Some(SasKeyBound {
                partition_key: epk,
                row_key: Some(erk),
            }) => {
                partition_key < epk.as_str()
                    || (partition_key == epk.as_str() && row_key <= erk.as_str())
            }
        };
        after_start && before_end
    }
}

/// What a verified SAS grants; [`Principal::authorize`](super::Principal::authorize) checks
/// operations against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SasGrant {
    /// The account the SAS was verified for.
    pub(crate) account: String,
    pub kind: SasKind,
    /// `sv`.
    pub(crate) version: String,
    /// Effective permissions (after merging a stored access policy).
    pub(crate) permissions: SasPermissions,
    /// `tn` as given (service SAS only); compared case-insensitively.
    pub(crate) table_name: Option<String>,
    /// `srt` (account SAS); all types for a service SAS, whose scope is its table.
    pub(crate) resource_types: ResourceTypes,
    /// `ss` (account SAS); table only for a service SAS.
    pub(crate) services: Services,
    /// Effective start (after merging), if any.
    pub(crate) start: Option<DateTime<Utc>>,
    /// Effective expiry (after merging).
    pub(crate) expiry: DateTime<Utc>,
    /// `sip`, if any.
    pub(crate) ip_range: Option<IpRange>,
    /// `spr`.
    pub(crate) protocol: SasProtocol,
    /// Service SAS key range (unbounded for an account SAS).
    pub(crate) key_range: SasKeyRange,
    /// `si`, if the SAS referenced a stored access policy.
    pub(crate) identifier: Option<String>,
    /// `ses` (account SAS), if any.
    pub(crate) encryption_scope: Option<String>,
}

impl SasGrant {
    /// The key range queries must be clipped to and writes checked against.
    pub(crate) fn key_range(&self) -> &SasKeyRange {
        &self.key_range
    }

    /// `true` when the SAS allows touching entity `(pk, rk)` (always for an account SAS).
    pub fn allows_key(&self, partition_key: &str, row_key: &str) -> bool {
        self.key_range.contains(partition_key, row_key)
    }

    /// [`allows_key`](Self::allows_key) as a result: keys outside the range are 403
    /// `AuthorizationFailure` [rec: Py `test_sas_add_outside_range`].
    pub fn check_key(&self, partition_key: &str, row_key: &str) -> Result<(), AuthError> {
        if self.allows_key(partition_key, row_key) {
            Ok(())
        } else {
            Err(AuthError::AuthorizationFailure)
        }
    }
}

/// The query names a SAS reads.
const SAS_FIELDS: &[&str] = &[
    "sv", "ss", "srt", "sp", "se", "st", "spr", "sip", "si", "tn", "spk", "srk", "epk", "erk",
    "ses", "sig",
];

/// Azure refuses a request that gives a SAS field twice (a client that appends its SAS again
/// on a retry, azure-sdk-for-net #32514): authentication fails instead of one value winning.
pub(crate) fn check_fields_given_once(pairs: &[(String, String)]) -> Result<(), AuthError> {
    for name in SAS_FIELDS {
        if pairs.iter().filter(|(n, _)| n == name).count() > 1 {
            return Err(AuthError::sas_field(format!(
                "{name} is given more than once."
            )));
        }
    }
    Ok(())
}

/// The SAS parameters of a query (each given once: see [`check_fields_given_once`]).
pub(crate) struct SasParams<'q> {
    pairs: &'q [(String, String)],
}

impl<'q> SasParams<'q> {
    pub(crate) fn new(pairs: &'q [(String, String)]) -> Self {
        SasParams { pairs }
    }

    fn get(&self, name: &str) -> Option<&'q str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// A mandatory field: present and not blank.
    fn mandatory(&self, name: &str) -> Result<&'q str, AuthError> {
        match self.get(name) {
            Some(v) if !v.trim().is_empty() => Ok(v),
            _ => Err(AuthError::sas_field(format!(
                "{name} is mandatory. Cannot be empty"
            ))),
        }
    }

    /// An optional field: absent, or present and not blank.
    fn optional(&self, name: &str) -> Result<Option<&'q str>, AuthError> {
        match self.get(name) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Err(AuthError::sas_field(format!(
                "{name} is optional but cannot be empty"
            ))),
            Some(v) => Ok(Some(v)),
        }
    }
}

const NOT_WELL_FORMED: &str = "Signature fields not well formed.";

fn not_well_formed() -> AuthError {
    AuthError::sas_field(NOT_WELL_FORMED)
}

fn parse_time(text: Option<&str>) -> Result<Option<DateTime<Utc>>, AuthError> {
    text.map(|t| parse_iso8601(t).ok_or_else(not_well_formed))
        .transpose()
}

fn is_version(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// Decodes `sig` and checks it is a 32-byte HMAC-SHA256 value.
fn decode_signature(sig: &str) -> Result<[u8; 32], AuthError> {
    let bytes = BASE64.decode(sig).map_err(|_| not_well_formed())?;
    <[u8; 32]>::try_from(bytes.as_slice())
        .map_err(|_| AuthError::sas_field("Signature size is invalid"))
}

/// `true` when any key signs `string_to_sign` to `expected` (constant-time comparison; every
/// key is tried).
fn any_key_matches(keys: &AccountKeys, string_to_sign: &str, expected: &[u8; 32]) -> bool {
    let mut matched = subtle::Choice::from(0u8);
    for key in keys.keys() {
        let computed = hmac_sha256(key, string_to_sign.as_bytes());
        matched |= computed.ct_eq(expected);
    }
    matched.into()
}

fn parse_sip_spr(
    params: &SasParams<'_>,
    version: &str,
) -> Result<(Option<IpRange>, SasProtocol), AuthError> {
    // Older versions do not sign sip/spr, so they are ignored there as Azure does.
    if !version_at_least(version, SAS_VERSION_2015_04_05) {
        return Ok((None, SasProtocol::HttpsOrHttp));
    }
    let ip_range = params
        .optional("sip")?
        .map(|t| IpRange::parse(t).ok_or_else(not_well_formed))
        .transpose()?;
    let protocol = params
        .optional("spr")?
        .map(|t| SasProtocol::parse(t).ok_or_else(not_well_formed))
        .transpose()?
        .unwrap_or(SasProtocol::HttpsOrHttp);
    Ok((ip_range, protocol))
}

/// Checks `[start, expiry)` against `now`.
fn check_time_window(
    start: Option<DateTime<Utc>>,
    expiry: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), AuthError> {
    if let Some(start) = start {
        if start >= expiry {
            return Err(AuthError::AuthenticationFailed(
                AuthFailure::SasExpiryBeforeStart { start, expiry },
            ));
        }
    }
    let effective_start = start.unwrap_or(now);
    if now < effective_start || now >= expiry {
        return Err(AuthError::AuthenticationFailed(
            AuthFailure::SasNotValidInTimeFrame {
                start: effective_start,
                expiry,
                now,
            },
        ));
    }
    Ok(())
}

/// Checks `sip` and `spr` against the request.
fn check_ip_and_protocol(
    req: &RequestView<'_>,
    ip_range: Option<&IpRange>,
    protocol: SasProtocol,
) -> Result<(), AuthError> {
    if let Some(range) = ip_range {
        // Without a known client address the check fails closed.
        if !req.client_ip.is_some_and(|ip| range.contains(ip)) {
            return Err(AuthError::AuthorizationSourceIPMismatch {
                source_ip: req.client_ip,
            });
        }
    }
    if protocol == SasProtocol::HttpsOnly && !req.is_https {
        return Err(AuthError::AuthorizationProtocolMismatch);
    }
    Ok(())
}

/// Verifies a table service SAS.
pub(crate) fn authenticate_service_sas(
    req: &RequestView<'_>,
    params: &SasParams<'_>,
    keys: &AccountKeys,
    policies: &dyn PolicyLookup,
) -> Result<SasGrant, AuthError> {
    let sig = params.mandatory("sig")?;
    let expected = decode_signature(sig)?;
    let si = params.optional("si")?;
    let tn = params.mandatory("tn")?;
    let spk = params.optional("spk")?;
    let srk = params.optional("srk")?;
    // The emulator's text, kept verbatim (it names the fields the other way round).
    if spk.is_none() && srk.is_some() {
        return Err(AuthError::sas_field(
            "srk is required when spk is provided.",
        ));
    }
    let epk = params.optional("epk")?;
    let erk = params.optional("erk")?;
    if epk.is_none() && erk.is_some() {
        return Err(AuthError::sas_field(
            "erk is required when epk is provided.",
        ));
    }
    let sv = params.mandatory("sv")?;
    if !is_version(sv) || !version_at_least(sv, SAS_VERSION_2012_02_12) {
        return Err(AuthError::sas_field(
            "sv is either not in the correct format or is not equal or later than version 2012-02-12",
        ));
    }
    let st_text = params.optional("st")?;
    let se_text = if si.is_some() {
        params.optional("se")?
    } else {
        Some(params.mandatory("se")?)
    };
    let sp_text = if si.is_some() {
        params.optional("sp")?
    } else {
        Some(params.mandatory("sp")?)
    };
    let start = parse_time(st_text)?;
    let expiry = parse_time(se_text)?;
    let permissions = sp_text
        .map(|t| SasPermissions::parse_table_ordered(t).ok_or_else(not_well_formed))
        .transpose()?;
    let (ip_range, protocol) = parse_sip_spr(params, sv)?;
    let signed_sip_spr = version_at_least(sv, SAS_VERSION_2015_04_05);

    let fields = ServiceSasFields {
        sp: sp_text.unwrap_or(""),
        st: st_text.unwrap_or(""),
        se: se_text.unwrap_or(""),
        tn,
        si: si.unwrap_or(""),
        sip: if signed_sip_spr {
            params.get("sip").unwrap_or("")
        } else {
            ""
        },
        spr: if signed_sip_spr {
            params.get("spr").unwrap_or("")
        } else {
            ""
        },
        sv,
        spk: spk.unwrap_or(""),
        srk: srk.unwrap_or(""),
        epk: epk.unwrap_or(""),
        erk: erk.unwrap_or(""),
    };
    let string_to_sign = service_sas_string_to_sign(req.account, &fields);
    if !any_key_matches(keys, &string_to_sign, &expected) {
        return Err(AuthError::AuthenticationFailed(
            AuthFailure::SasSignatureMismatch { string_to_sign },
        ));
    }

    // Stored access policy merge (Azure docs: "Create a service SAS").
    let (start, expiry, permissions) = match si {
        None => (
            start,
            expiry.ok_or_else(not_well_formed)?,
            permissions.ok_or_else(not_well_formed)?,
        ),
        Some(id) => {
            let policy = policies.policy(req.account, tn, id).ok_or_else(|| {
                AuthError::AuthenticationFailed(AuthFailure::PolicyNotFound {
                    identifier: id.to_string(),
                })
            })?;
            merge_policy(start, expiry, permissions, &policy)?
        }
    };
    check_time_window(start, expiry, req.now)?;
    check_ip_and_protocol(req, ip_range.as_ref(), protocol)?;

    let key_range = SasKeyRange {
        start: spk.map(|pk| SasKeyBound {
            partition_key: pk.to_string(),
            row_key: srk.map(str::to_string),
        }),
        end: epk.map(|pk| SasKeyBound {
            partition_key: pk.to_string(),
            row_key: erk.map(str::to_string),
        }),
    };
    Ok(SasGrant {
        account: req.account.to_string(),
        kind: SasKind::Service,
        version: sv.to_string(),
        permissions,
        table_name: Some(tn.to_string()),
        resource_types: ResourceTypes::all(),
        services: Services::table_only(),
        start,
        expiry,
        ip_range,
        protocol,
        key_range,
        identifier: si.map(str::to_string),
        encryption_scope: None,
    })
}

/// Effective `(start, expiry, permissions)` after merging a stored access policy.
type EffectivePolicy = (Option<DateTime<Utc>>, DateTime<Utc>, SasPermissions);

/// Merges a stored access policy into the SAS fields: a field missing from both is an error
/// (expiry first, then permission), a field present in both is an error, otherwise the policy
/// fills the gaps. (Order and texts as in the legacy emulator.)
fn merge_policy(
    start: Option<DateTime<Utc>>,
    expiry: Option<DateTime<Utc>>,
    permissions: Option<SasPermissions>,
    policy: &AccessPolicy,
) -> Result<EffectivePolicy, AuthError> {
    let policy_start = parse_time(policy.start.as_deref())?;
    let policy_expiry = parse_time(policy.expiry.as_deref())?;
    let policy_permissions = policy
        .permission
        .as_deref()
        .map(|p| SasPermissions::parse_table_any_order(p).ok_or_else(not_well_formed))
        .transpose()?;
    if expiry.is_none() && policy_expiry.is_none() {
        return Err(AuthError::AuthenticationFailed(
            AuthFailure::PolicyExpiryMissing,
        ));
    }
    if permissions.is_none() && policy_permissions.is_none() {
        return Err(AuthError::AuthenticationFailed(
            AuthFailure::PolicyPermissionMissing,
        ));
    }
    if (start.is_some() && policy_start.is_some())
        || (expiry.is_some() && policy_expiry.is_some())
        || (permissions.is_some() && policy_permissions.is_some())
    {
        return Err(AuthError::AuthenticationFailed(
            AuthFailure::PolicyFieldConflict,
        ));
    }
    let expiry = expiry.or(policy_expiry).ok_or_else(not_well_formed)?;
    let permissions = permissions
        .or(policy_permissions)
        .ok_or_else(not_well_formed)?;
    Ok((start.or(policy_start), expiry, permissions))
}

/// Verifies an account SAS.
pub(crate) fn authenticate_account_sas(
    req: &RequestView<'_>,
    params: &SasParams<'_>,
    keys: &AccountKeys,
) -> Result<SasGrant, AuthError> {
    let sig = params.mandatory("sig")?;
    let expected = decode_signature(sig)?;
    let sv = params.mandatory("sv")?;
    if !is_version(sv) || !version_at_least(sv, SAS_VERSION_2015_04_05) {
        return Err(AuthError::sas_field(
            "sv is either not in the correct format or is not equal or later than version 2015-04-05",
        ));
    }
    let ss = params.mandatory("ss")?;
    let srt = params.mandatory("srt")?;
    let sp = params.mandatory("sp")?;
    let se = params.mandatory("se")?;
    let st = params.optional("st")?;
    let services = Services::parse(ss).ok_or_else(not_well_formed)?;
    let resource_types = ResourceTypes::parse(srt).ok_or_else(not_well_formed)?;
    let permissions = SasPermissions::parse_account(sp).ok_or_else(not_well_formed)?;
    let start = parse_time(st)?;
    let expiry = parse_time(Some(se))?.ok_or_else(not_well_formed)?;
    let (ip_range, protocol) = parse_sip_spr(params, sv)?;
    let ses = params.get("ses").filter(|s| !s.is_empty());

    let fields = AccountSasFields {
        sp,
        ss,
        srt,
        st: st.unwrap_or(""),
        se,
        sip: params.get("sip").unwrap_or(""),
        spr: params.get("spr").unwrap_or(""),
        sv,
        ses: ses.unwrap_or(""),
    };
    let string_to_sign = account_sas_string_to_sign(req.account, &fields);
    if !any_key_matches(keys, &string_to_sign, &expected) {
        return Err(AuthError::AuthenticationFailed(
            AuthFailure::SasSignatureMismatch { string_to_sign },
        ));
    }
    check_time_window(start, expiry, req.now)?;
    check_ip_and_protocol(req, ip_range.as_ref(), protocol)?;

    Ok(SasGrant {
        account: req.account.to_string(),
        kind: SasKind::Account,
        version: sv.to_string(),
        permissions,
        table_name: None,
        resource_types,
        services,
        start,
        expiry,
        ip_range,
        protocol,
        key_range: SasKeyRange::default(),
        identifier: None,
        encryption_scope: ses.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_permissions_ordered() {
        let p = SasPermissions::parse_table_ordered("raud").unwrap();
        assert!(p.read && p.add && p.update && p.delete);
        assert!(!p.write && !p.list && !p.create);
        assert_eq!(
            SasPermissions::parse_table_ordered("rd"),
            Some(SasPermissions {
                read: true,
                delete: true,
                ..Default::default()
            })
        );
        for bad in ["dr", "rr", "w", "rau d", "R"] {
            assert_eq!(SasPermissions::parse_table_ordered(bad), None, "{bad}");
        }
        assert!(SasPermissions::parse_table_any_order("dr").is_some());
        assert!(SasPermissions::parse_table_any_order("drr").is_none());
    }

    #[test]
    fn account_permissions_any_order() {
        let p = SasPermissions::parse_account("uacldwr").unwrap();
        assert!(p.read && p.write && p.delete && p.list && p.add && p.create && p.update);
        assert!(!p.process);
        assert!(SasPermissions::parse_account("rwdlacupytfix").is_some());
        assert!(SasPermissions::parse_account("rr").is_none());
        assert!(SasPermissions::parse_account("rz").is_none());
    }

    #[test]
    fn resource_types_and_services() {
        assert_eq!(ResourceTypes::parse("sco"), Some(ResourceTypes::all()));
        assert_eq!(
            ResourceTypes::parse("o"),
            Some(ResourceTypes {
                object: true,
                ..Default::default()
            })
        );
        assert_eq!(ResourceTypes::parse("x"), None);
        assert_eq!(ResourceTypes::parse("oo"), None);
        assert!(Services::parse("bqtf").unwrap().table);
        assert!(!Services::parse("bq").unwrap().table);
        assert_eq!(Services::parse("tz"), None);
    }

    #[test]
    fn protocol_parsing() {
        assert_eq!(SasProtocol::parse("https"), Some(SasProtocol::HttpsOnly));
        assert_eq!(
            SasProtocol::parse("https,http"),
            Some(SasProtocol::HttpsOrHttp)
        );
        assert_eq!(
            SasProtocol::parse("http,https"),
            Some(SasProtocol::HttpsOrHttp)
        );
        assert_eq!(SasProtocol::parse("http"), None);
        assert_eq!(SasProtocol::parse("HTTPS"), None);
    }

    #[test]
    fn ip_ranges() {
        let single = IpRange::parse("168.1.5.65").unwrap();
        assert!(single.contains("168.1.5.65".parse().unwrap()));
        assert!(!single.contains("168.1.5.66".parse().unwrap()));
        let range = IpRange::parse("168.1.5.60-168.1.5.70").unwrap();
        for (ip, inside) in [
            ("168.1.5.59", false),
            ("168.1.5.60", true),
            ("168.1.5.65", true),
            ("168.1.5.70", true),
            ("168.1.5.71", false),
            ("::ffff:168.1.5.61", true),
            ("::1", false),
        ] {
            assert_eq!(range.contains(ip.parse().unwrap()), inside, "{ip}");
        }
        assert!(IpRange::parse("168.1.5.70-168.1.5.60").is_none());
        assert!(IpRange::parse("1.2.3.4-::1").is_none());
        assert!(IpRange::parse("1.2.3").is_none());
        assert!(IpRange::parse("1.2.3.4-1.2.3.5-1.2.3.6").is_none());
        let v6 = IpRange::parse("::1-::5").unwrap();
        assert!(v6.contains("::3".parse().unwrap()));
        assert!(!v6.contains("127.0.0.1".parse().unwrap()));
    }

    fn bound(pk: &str, rk: Option<&str>) -> Option<SasKeyBound> {
        Some(SasKeyBound {
            partition_key: pk.to_string(),
            row_key: rk.map(str::to_string),
        })
    }

    /// The four bound shapes of a service SAS range (Azure docs: "Create a service SAS"),
    /// each at and around its edge.
    #[test]
    fn key_range_shapes() {
        let spk = SasKeyRange {
            start: bound("m", None),
            end: None,
        };
        assert!(!spk.contains("l", "zzz"));
        assert!(spk.contains("m", ""));
        assert!(spk.contains("n", ""));

        let epk = SasKeyRange {
            start: None,
            end: bound("m", None),
        };
        assert!(epk.contains("l", "zzz"));
        assert!(epk.contains("m", "zzz"));
        assert!(!epk.contains("ma", ""));

        let spk_srk = SasKeyRange {
            start: bound("m", Some("5")),
            end: None,
        };
        assert!(!spk_srk.contains("l", "9"));
        assert!(!spk_srk.contains("m", "4"));
        assert!(spk_srk.contains("m", "5"));
        assert!(spk_srk.contains("m", "6"));
        assert!(spk_srk.contains("n", "0"));

        let epk_erk = SasKeyRange {
            start: None,
            end: bound("m", Some("5")),
        };
        assert!(epk_erk.contains("l", "9"));
        assert!(epk_erk.contains("m", "4"));
        assert!(epk_erk.contains("m", "5"));
        assert!(!epk_erk.contains("m", "6"));
        assert!(!epk_erk.contains("n", "0"));

        // The recorded Py case: spk=test&srk=test1&epk=test&erk=test1 admits only (test, test1).
        let point = SasKeyRange {
            start: bound("test", Some("test1")),
            end: bound("test", Some("test1")),
        };
        assert!(point.contains("test", "test1"));
        assert!(!point.contains("test", "test2"));
        assert!(!point.contains("test", "test0"));
        assert!(!point.contains("tesu", "test1"));

        assert!(SasKeyRange::default().is_unbounded());
        assert!(SasKeyRange::default().contains("anything", ""));
    }

    #[test]
    fn time_window() {
        let t = |s: &str| parse_iso8601(s).unwrap();
        let now = t("2020-01-01T12:00:00Z");
        assert!(check_time_window(None, t("2020-01-01T12:00:01Z"), now).is_ok());
        assert!(check_time_window(Some(now), t("2020-01-02"), now).is_ok());
        // Expiry is exclusive.
        assert!(matches!(
            check_time_window(None, now, now),
            Err(AuthError::AuthenticationFailed(
                AuthFailure::SasNotValidInTimeFrame { .. }
            ))
        ));
        // Not yet valid.
        assert!(matches!(
            check_time_window(Some(t("2020-01-01T12:00:01Z")), t("2020-01-02"), now),
            Err(AuthError::AuthenticationFailed(
                AuthFailure::SasNotValidInTimeFrame { .. }
            ))
        ));
        assert!(matches!(
            check_time_window(Some(t("2020-01-03")), t("2020-01-02"), now),
            Err(AuthError::AuthenticationFailed(
                AuthFailure::SasExpiryBeforeStart { .. }
            ))
        ));
    }
}
