//! Pure string-to-sign builders for the Table service (Azure docs: "Authorize with Shared
//! Key", "Create a service SAS", "Create an account SAS") and the HMAC that signs
//! them. Nothing here looks at keys other than through [`compute_signature`], and nothing does
//! I/O; every function is a plain text transformation so the test vectors can pin it down.
//!
//! Depends on nothing else in the crate.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use percent_encoding::percent_decode_str;
use sha2::Sha256;

/// Splits a raw query string into `(name, value)` pairs, percent-decoding both (UTF-8, invalid
/// sequences replaced). A `+` stays a literal `+`: SAS signatures are base64 and may carry one
/// unescaped, and both SDKs escape spaces as `%20`. Empty segments (`a=1&&b=2`) are skipped; a
/// segment without `=` yields an empty value.
pub fn parse_query(raw_query: &str) -> Vec<(String, String)> {
    raw_query
        .split('&')
        .filter(|segment| !segment.is_empty())
        .map(|segment| {
            let (name, value) = segment.split_once('=').unwrap_or((segment, ""));
            (
                percent_decode_str(name).decode_utf8_lossy().into_owned(),
                percent_decode_str(value).decode_utf8_lossy().into_owned(),
            )
        })
        .collect()
}

/// The Shared Key / Shared Key Lite canonicalized resource for the Table service (Azure docs: "Authorize with Shared Key"):
/// `"/" + account + raw path` plus `"?comp=" + value` when the query has a `comp` parameter
/// (name matched case-insensitively, value percent-decoded); no other parameter takes part.
///
/// `raw_path` is the path exactly as on the request line, still percent-encoded; in path style
/// it starts with the account segment, which is why the account then appears twice
/// (`/devstoreaccount1/devstoreaccount1/Tables`). An empty path is treated as `/`.
pub fn canonicalized_resource(account: &str, raw_path: &str, raw_query: Option<&str>) -> String {
    let path = if raw_path.is_empty() { "/" } else { raw_path };
    let mut resource = String::with_capacity(1 + account.len() + path.len() + 16);
    resource.push('/');
    resource.push_str(account);
    resource.push_str(path);
    if let Some(query) = raw_query {
        if let Some((_, comp)) = parse_query(query)
            .into_iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("comp"))
        {
            resource.push_str("?comp=");
            resource.push_str(&comp);
        }
    }
    resource
}

/// Shared Key string-to-sign for the Table service (Azure docs: "Authorize with Shared Key"):
/// `VERB \n Content-MD5 \n Content-Type \n Date \n CanonicalizedResource`.
pub fn shared_key_string_to_sign(
    verb: &str,
    content_md5: &str,
    content_type: &str,
    date: &str,
    canonicalized_resource: &str,
) -> String {
    format!("{verb}\n{content_md5}\n{content_type}\n{date}\n{canonicalized_resource}")
}

/// Shared Key Lite string-to-sign for the Table service (Azure docs: "Authorize with Shared Key"): `Date \n CanonicalizedResource`.
pub fn shared_key_lite_string_to_sign(date: &str, canonicalized_resource: &str) -> String {
    let mut s = String::with_capacity(date.len() + 1 + canonicalized_resource.len());
    s.push_str(date);
    s.push('\n');
    s.push_str(canonicalized_resource);
    s
}

/// The signed fields of a table service SAS, each exactly as decoded from the query string and
/// empty when absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServiceSasFields<'a> {
    pub sp: &'a str,
    pub st: &'a str,
    pub se: &'a str,
    pub tn: &'a str,
    pub si: &'a str,
    pub sip: &'a str,
    pub spr: &'a str,
    pub sv: &'a str,
    pub spk: &'a str,
    pub srk: &'a str,
    pub epk: &'a str,
    pub erk: &'a str,
}

/// First signed version with `sip`/`spr` in the string-to-sign and account SAS.
pub(crate) const SAS_VERSION_2015_04_05: &str = "2015-04-05";
/// First signed version whose service-SAS canonicalized resource starts with `/table`.
pub(crate) const SAS_VERSION_2015_02_21: &str = "2015-02-21";
/// First signed version whose account-SAS string-to-sign carries `ses`.
pub(crate) const SAS_VERSION_2020_12_06: &str = "2020-12-06";
/// Oldest signed version of a table service SAS.
pub(crate) const SAS_VERSION_2012_02_12: &str = "2012-02-12";

/// `true` when `version` (a `YYYY-MM-DD` string) is at least `minimum`. Versions are compared
/// as text, which orders well-formed dates correctly.
pub(crate) fn version_at_least(version: &str, minimum: &str) -> bool {
    version >= minimum
}

/// The canonicalized resource of a table service SAS (Azure docs: "Create a service SAS"):
/// `/table/{account}/{table lowercase}` for `sv` ≥ 2015-02-21, otherwise `/{account}/{table}`.
pub(crate) fn service_sas_canonicalized_resource(account: &str, table: &str, sv: &str) -> String {
    let table = table.to_lowercase();
    if version_at_least(sv, SAS_VERSION_2015_02_21) {
        format!("/table/{account}/{table}")
    } else {
        format!("/{account}/{table}")
    }
}

/// Table service SAS string-to-sign (Azure docs: "Create a service SAS"), layout chosen by `sv`; fields joined with `\n`,
/// no trailing newline:
///
/// * sv ≥ 2015-04-05: `sp st se resource si sip spr sv spk srk epk erk`
/// * older: `sp st se resource si sv spk srk epk erk`
pub fn service_sas_string_to_sign(account: &str, f: &ServiceSasFields<'_>) -> String {
    let resource = service_sas_canonicalized_resource(account, f.tn, f.sv);
    let mut parts: Vec<&str> = vec![f.sp, f.st, f.se, &resource, f.si];
    if version_at_least(f.sv, SAS_VERSION_2015_04_05) {
        parts.push(f.sip);
        parts.push(f.spr);
    }
    parts.extend([f.sv, f.spk, f.srk, f.epk, f.erk]);
    parts.join("\n")
}

/// The signed fields of an account SAS, each as decoded from the query string and empty when
/// absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccountSasFields<'a> {
    pub sp: &'a str,
    pub ss: &'a str,
    pub srt: &'a str,
    pub st: &'a str,
    pub se: &'a str,
    pub sip: &'a str,
    pub spr: &'a str,
    pub sv: &'a str,
    pub ses: &'a str,
}

/// Account SAS string-to-sign (Azure docs: "Create an account SAS"), every field followed by `\n` (so the string ends with a
/// newline): `account sp ss srt st se sip spr sv` and, for sv ≥ 2020-12-06, `ses`.
pub fn account_sas_string_to_sign(account: &str, f: &AccountSasFields<'_>) -> String {
    let mut parts: Vec<&str> = vec![account, f.sp, f.ss, f.srt, f.st, f.se, f.sip, f.spr, f.sv];
    if version_at_least(f.sv, SAS_VERSION_2020_12_06) {
        parts.push(f.ses);
    }
    let mut out = parts.join("\n");
    out.push('\n');
    out
}

/// Raw HMAC-SHA256 of `message` under `key`.
pub(crate) fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key)
        .expect("HMAC accepts keys of any length; InvalidLength is never returned for SHA-256");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// Raw HMAC-SHA256 of `message` with a MAC whose key is already absorbed.
pub(crate) fn hmac_keyed(keyed: &Hmac<Sha256>, message: &[u8]) -> [u8; 32] {
    let mut mac = keyed.clone();
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// `Base64(HMAC-SHA256(key, UTF8(string_to_sign)))`, the signature every scheme here uses.
pub fn compute_signature(key: &[u8], string_to_sign: &str) -> String {
    BASE64.encode(hmac_sha256(key, string_to_sign.as_bytes()))
}

/// The `Authorization` header of a Shared Key Lite request: `SharedKeyLite account:signature`
/// over `x-ms-date` (`date`) and the canonicalized resource of `raw_path` and `raw_query`.
pub fn shared_key_lite_authorization(
    account: &str,
    key: &[u8],
    date: &str,
    raw_path: &str,
    raw_query: Option<&str>,
) -> String {
    let resource = canonicalized_resource(account, raw_path, raw_query);
    let signature = compute_signature(key, &shared_key_lite_string_to_sign(date, &resource));
    format!("SharedKeyLite {account}:{signature}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEV_KEY: &str =
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

    fn key() -> Vec<u8> {
        BASE64.decode(DEV_KEY).unwrap()
    }

    /// Known-answer vectors computed with the development account key.
    #[test]
    fn spec_shared_key_vectors() {
        let date = "Mon, 27 Jun 2016 15:25:14 GMT";
        let r = canonicalized_resource("devstoreaccount1", "/devstoreaccount1/Tables", None);
        let lite = shared_key_lite_string_to_sign(date, &r);
        assert_eq!(
            lite,
            "Mon, 27 Jun 2016 15:25:14 GMT\n/devstoreaccount1/devstoreaccount1/Tables"
        );
        assert_eq!(
            compute_signature(&key(), &lite),
            "0t5frBDAHUb3TEbAMT7v9wwgj+L4V00scNDQC6plt2w="
        );

        let post = shared_key_string_to_sign("POST", "", "application/json", date, &r);
        assert_eq!(
            compute_signature(&key(), &post),
            "IJ2WSCZvMD3QakOTDOqZxzyd1eHN4Q0JBl8FcbpteSc="
        );

        let acl = canonicalized_resource(
            "devstoreaccount1",
            "/devstoreaccount1/mytable",
            Some("comp=acl"),
        );
        assert_eq!(acl, "/devstoreaccount1/devstoreaccount1/mytable?comp=acl");
        let sts = shared_key_string_to_sign("GET", "", "", date, &acl);
        assert_eq!(
            compute_signature(&key(), &sts),
            "1va20X1TzUg2DOJJi740thS1CJgVqys2hHethbNVFWA="
        );

        let entity = canonicalized_resource(
            "devstoreaccount1",
            "/devstoreaccount1/mytable(PartitionKey='pk1',RowKey='rk1')",
            Some("$select=a"),
        );
        let sts = shared_key_string_to_sign("GET", "", "", date, &entity);
        assert_eq!(
            compute_signature(&key(), &sts),
            "E94+JsOFdN99p5ELM3SzkDDU9b+JVbZncJbigtb7seE="
        );
    }

    #[test]
    fn spec_service_sas_vector() {
        let f = ServiceSasFields {
            sp: "raud",
            st: "2016-06-27T00:00:00Z",
            se: "2016-06-28T00:00:00Z",
            tn: "MyTable",
            spr: "https,http",
            sv: "2019-02-02",
            spk: "pk1",
            epk: "pk1",
            ..Default::default()
        };
        let sts = service_sas_string_to_sign("devstoreaccount1", &f);
        assert_eq!(
            sts,
            "raud\n2016-06-27T00:00:00Z\n2016-06-28T00:00:00Z\n/table/devstoreaccount1/mytable\n\n\nhttps,http\n2019-02-02\npk1\n\npk1\n"
        );
        assert_eq!(
            compute_signature(&key(), &sts),
            "Z1vvstBIbXA2g0L+6z0RwslY6Hb6LqpeA5+pGu7rFPk="
        );
    }

    #[test]
    fn spec_account_sas_vector() {
        let f = AccountSasFields {
            sp: "rwdlacu",
            ss: "t",
            srt: "sco",
            se: "2016-06-28T00:00:00Z",
            spr: "https,http",
            sv: "2019-02-02",
            ..Default::default()
        };
        let sts = account_sas_string_to_sign("devstoreaccount1", &f);
        assert_eq!(
            sts,
            "devstoreaccount1\nrwdlacu\nt\nsco\n\n2016-06-28T00:00:00Z\n\nhttps,http\n2019-02-02\n"
        );
        assert_eq!(
            compute_signature(&key(), &sts),
            "tUBZobbSB1LaEYbuoPPqjh2379XeKQDkEUkk1im/eSM="
        );
    }

    #[test]
    fn service_sas_layouts_by_version() {
        let base = ServiceSasFields {
            sp: "r",
            se: "2016-06-28",
            tn: "T",
            sip: "1.2.3.4",
            spr: "https",
            ..Default::default()
        };
        let old = ServiceSasFields {
            sv: "2013-08-15",
            ..base
        };
        assert_eq!(
            service_sas_string_to_sign("acct", &old),
            "r\n\n2016-06-28\n/acct/t\n\n2013-08-15\n\n\n\n"
        );
        let mid = ServiceSasFields {
            sv: "2015-02-21",
            ..base
        };
        assert_eq!(
            service_sas_string_to_sign("acct", &mid),
            "r\n\n2016-06-28\n/table/acct/t\n\n2015-02-21\n\n\n\n"
        );
        let new = ServiceSasFields {
            sv: "2015-04-05",
            ..base
        };
        assert_eq!(
            service_sas_string_to_sign("acct", &new),
            "r\n\n2016-06-28\n/table/acct/t\n\n1.2.3.4\nhttps\n2015-04-05\n\n\n\n"
        );
    }

    #[test]
    fn account_sas_layout_with_encryption_scope() {
        let f = AccountSasFields {
            sp: "r",
            ss: "t",
            srt: "o",
            se: "x",
            sv: "2020-12-06",
            ses: "scope",
            ..Default::default()
        };
        assert_eq!(
            account_sas_string_to_sign("a", &f),
            "a\nr\nt\no\n\nx\n\n\n2020-12-06\nscope\n"
        );
    }

    #[test]
    fn canonicalized_resource_rules() {
        // Host style, comp only, other parameters ignored, raw encoding kept.
        assert_eq!(
            canonicalized_resource(
                "acct",
                "/t(PartitionKey=%27a%27,RowKey=%27b%27)",
                Some("$filter=x&timeout=5")
            ),
            "/acct/t(PartitionKey=%27a%27,RowKey=%27b%27)"
        );
        assert_eq!(
            canonicalized_resource("acct", "/", Some("restype=service&comp=properties")),
            "/acct/?comp=properties"
        );
        assert_eq!(canonicalized_resource("acct", "", None), "/acct/");
        assert_eq!(
            canonicalized_resource("acct", "/$batch", Some("COMP=acl")),
            "/acct/$batch?comp=acl"
        );
    }

    #[test]
    fn query_parsing() {
        assert_eq!(
            parse_query("a=1&&b=%2B+x&c&d=%3D"),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "++x".into()),
                ("c".into(), "".into()),
                ("d".into(), "=".into()),
            ]
        );
    }
}
