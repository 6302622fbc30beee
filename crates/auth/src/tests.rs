//! Accept/reject tests for every authentication and authorization rule. Requests are signed
//! with the string-to-sign builders of [`canonical`], which the known-answer vectors (computed with the development account key) and the
//! SDK-generated fixtures (`tests/it/auth_golden.rs`) pin down independently.

use std::net::IpAddr;

use base64::engine::general_purpose::{STANDARD as BASE64, URL_SAFE_NO_PAD};
use base64::Engine as _;
use chrono::{DateTime, Utc};
use http::{HeaderMap, HeaderValue};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};

use super::accounts::{DEV_ACCOUNT_KEY, DEV_ACCOUNT_NAME};
use super::canonical::{
    account_sas_string_to_sign, canonicalized_resource, compute_signature,
    service_sas_string_to_sign, shared_key_lite_string_to_sign, shared_key_string_to_sign,
    AccountSasFields, ServiceSasFields,
};
use super::*;

const ACCT: &str = DEV_ACCOUNT_NAME;
const DATE: &str = "Mon, 27 Jun 2016 15:25:14 GMT";

fn t(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn dev_key() -> Vec<u8> {
    BASE64.decode(DEV_ACCOUNT_KEY).unwrap()
}

/// An owned request description, turned into a [`RequestView`] per run.
#[derive(Clone)]
struct Req {
    method: String,
    path: String,
    query: Option<String>,
    headers: HeaderMap,
    account: String,
    path_style: bool,
    https: bool,
    ip: Option<IpAddr>,
    now: DateTime<Utc>,
}

impl Req {
    fn new(method: &str, path: &str, query: Option<&str>) -> Self {
        Req {
            method: method.into(),
            path: path.into(),
            query: query.map(str::to_string),
            headers: HeaderMap::new(),
            account: ACCT.into(),
            path_style: true,
            https: false,
            ip: Some("127.0.0.1".parse().unwrap()),
            now: t("2016-06-27T15:25:14Z"),
        }
    }

    fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers
            .append(name, HeaderValue::from_str(value).unwrap());
        self
    }

    fn view(&self) -> RequestView<'_> {
        RequestView {
            method: &self.method,
            raw_path: &self.path,
            raw_query: self.query.as_deref(),
            headers: &self.headers,
            account: &self.account,
            path_style: self.path_style,
            is_https: self.https,
            client_ip: self.ip,
            now: self.now,
        }
    }

    fn run(&self) -> Result<Principal, AuthError> {
        authenticate(&self.view(), &Accounts::dev())
    }

    fn run_with(
        &self,
        policies: &dyn PolicyLookup,
        options: &AuthOptions,
    ) -> Result<Principal, AuthError> {
        authenticate_with(&self.view(), &Accounts::dev(), policies, options)
    }

    /// Adds `Authorization: SharedKey` over the request as it stands, signing with `date`.
    fn sign_shared_key(self, date: &str) -> Self {
        let resource = canonicalized_resource(&self.account, &self.path, self.query.as_deref());
        let get = |n: &str| {
            self.headers
                .get(n)
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default()
        };
        let sts = shared_key_string_to_sign(
            &self.method,
            &get("content-md5"),
            &get("content-type"),
            date,
            &resource,
        );
        let sig = compute_signature(&dev_key(), &sts);
        let account = self.account.clone();
        self.header("authorization", &format!("SharedKey {account}:{sig}"))
    }

    fn sign_lite_with_resource(self, date: &str, resource: &str) -> Self {
        let sig = compute_signature(&dev_key(), &shared_key_lite_string_to_sign(date, resource));
        let account = self.account.clone();
        self.header("authorization", &format!("SharedKeyLite {account}:{sig}"))
    }
}

fn failure(result: Result<Principal, AuthError>) -> AuthFailure {
    match result {
        Err(AuthError::AuthenticationFailed(f)) => f,
        other => panic!("expected AuthenticationFailed, got {other:?}"),
    }
}

fn code(result: Result<Principal, AuthError>) -> &'static str {
    result.expect_err("expected an error").code()
}

// ---------------------------------------------------------------------------------------
// Shared Key / Shared Key Lite
// ---------------------------------------------------------------------------------------

/// The known-answer vectors (development account key), as whole requests.
#[test]
fn spec_vectors_as_requests() {
    let lite = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .header(
            "authorization",
            "SharedKeyLite devstoreaccount1:0t5frBDAHUb3TEbAMT7v9wwgj+L4V00scNDQC6plt2w=",
        );
    assert_eq!(
        lite.run(),
        Ok(Principal::SharedKey {
            account: ACCT.into()
        })
    );
    let post = Req::new("POST", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .header("content-type", "application/json")
        .header(
            "authorization",
            "SharedKey devstoreaccount1:IJ2WSCZvMD3QakOTDOqZxzyd1eHN4Q0JBl8FcbpteSc=",
        );
    assert!(post.run().is_ok());
    let acl = Req::new("GET", "/devstoreaccount1/mytable", Some("comp=acl"))
        .header("x-ms-date", DATE)
        .header(
            "authorization",
            "SharedKey devstoreaccount1:1va20X1TzUg2DOJJi740thS1CJgVqys2hHethbNVFWA=",
        );
    assert!(acl.run().is_ok());
    let entity = Req::new(
        "GET",
        "/devstoreaccount1/mytable(PartitionKey='pk1',RowKey='rk1')",
        None,
    )
    .header("x-ms-date", DATE)
    .header(
        "authorization",
        "SharedKey devstoreaccount1:E94+JsOFdN99p5ELM3SzkDDU9b+JVbZncJbigtb7seE=",
    );
    assert!(entity.run().is_ok());
    // The same signature for `%27` instead of `'`: the raw path is signed, so it fails.
    let mut encoded = entity.clone();
    encoded.path = "/devstoreaccount1/mytable(PartitionKey=%27pk1%27,RowKey=%27rk1%27)".into();
    let f = failure(encoded.run());
    assert!(matches!(f, AuthFailure::SignatureMismatch { .. }), "{f:?}");
}

#[test]
fn mismatch_reports_the_string_to_sign() {
    let req = Req::new("GET", "/devstoreaccount1/Tables", Some("$top=1"))
        .header("x-ms-date", DATE)
        .header("authorization", "SharedKey devstoreaccount1:AAAA");
    let e = req.run().unwrap_err();
    assert_eq!(e.status(), 403);
    assert_eq!(
        e.authentication_error_detail().unwrap(),
        "The MAC signature found in the HTTP request 'AAAA' is not the same as any computed signature. Server used following string to sign: 'GET\n\n\nMon, 27 Jun 2016 15:25:14 GMT\n/devstoreaccount1/devstoreaccount1/Tables'."
    );
}

#[test]
fn host_style_single_account_segment() {
    let mut req = Req::new("GET", "/Tables", None).header("x-ms-date", DATE);
    req.path_style = false;
    req.https = true;
    let req = req.sign_shared_key(DATE);
    assert!(req.run().is_ok());
    // Signed as if path style (account doubled) → rejected.
    let mut wrong = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .sign_shared_key(DATE);
    wrong.path = "/Tables".into();
    wrong.path_style = false;
    assert!(wrong.run().is_err());
}

#[test]
fn date_header_rules() {
    let other = "Mon, 27 Jun 2016 15:20:00 GMT";
    // Only Date.
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("date", DATE)
        .sign_shared_key(DATE);
    assert!(req.run().is_ok());
    // Both: x-ms-date governs...
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .header("date", other)
        .sign_shared_key(DATE);
    assert!(req.run().is_ok());
    // ...but a signature over the Date header is accepted too [emu].
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .header("date", other)
        .sign_shared_key(other);
    assert!(req.run().is_ok());
    // A third date is not.
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .header("date", other)
        .sign_shared_key("Mon, 27 Jun 2016 15:21:00 GMT");
    assert!(matches!(
        failure(req.run()),
        AuthFailure::SignatureMismatch { .. }
    ));
    // No date at all.
    let req = Req::new("GET", "/devstoreaccount1/Tables", None).sign_shared_key("");
    assert_eq!(failure(req.run()), AuthFailure::DateHeaderMissing);
    // Not an RFC 1123 date.
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", "2016-06-27T15:25:14Z")
        .sign_shared_key("2016-06-27T15:25:14Z");
    assert_eq!(failure(req.run()), AuthFailure::DateHeaderInvalid);
    assert_eq!(
        AuthError::AuthenticationFailed(AuthFailure::DateHeaderInvalid)
            .authentication_error_detail()
            .unwrap(),
        "The Date header in the request is incorrect."
    );
}

#[test]
fn clock_skew_check_and_switch() {
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .sign_shared_key(DATE);
    let mut late = req.clone();
    late.now = t("2016-06-27T15:40:14Z");
    assert!(late.run().is_ok(), "exactly 15 minutes is allowed");
    late.now = t("2016-06-27T15:40:15Z");
    let f = failure(late.run());
    assert!(matches!(f, AuthFailure::DateHeaderTooOld { .. }));
    assert_eq!(
        f.detail().unwrap(),
        "Request date header too old: 'Mon, 27 Jun 2016 15:25:14 GMT'"
    );
    let mut early = req.clone();
    early.now = t("2016-06-27T15:10:13Z");
    assert!(matches!(
        failure(early.run()),
        AuthFailure::DateHeaderInFuture { .. }
    ));
    // Switched off.
    let off = AuthOptions {
        max_clock_skew: None,
        ..AuthOptions::default()
    };
    late.now = t("2030-01-01T00:00:00Z");
    assert!(late.run_with(&NoPolicies, &off).is_ok());
    // Tighter window.
    let tight = AuthOptions {
        max_clock_skew: Some(chrono::Duration::seconds(30)),
        ..AuthOptions::default()
    };
    let mut r = req.clone();
    r.now = t("2016-06-27T15:26:00Z");
    assert!(r.run_with(&NoPolicies, &tight).is_err());
}

#[test]
fn shared_key_signs_md5_type_and_verb() {
    let req = Req::new(
        "PUT",
        "/devstoreaccount1/t(PartitionKey='a',RowKey='b')",
        None,
    )
    .header("x-ms-date", DATE)
    .header("content-md5", "Q2hlY2sgSW50ZWdyaXR5IQ==")
    .header("content-type", "application/json")
    .sign_shared_key(DATE);
    assert!(req.run().is_ok());
    let mut no_md5 = req.clone();
    no_md5.headers.remove("content-md5");
    assert!(no_md5.run().is_err());
    let mut verb = req.clone();
    verb.method = "MERGE".into();
    assert!(verb.run().is_err());
    // Lowercase verb on the wire is signed uppercase.
    let mut lower = req.clone();
    lower.method = "put".into();
    assert!(lower.run().is_ok());
}

#[test]
fn lite_ignores_verb_and_content_headers() {
    let req = Req::new("POST", "/devstoreaccount1/t", None)
        .header("x-ms-date", DATE)
        .header("content-type", "application/json")
        .sign_lite_with_resource(DATE, "/devstoreaccount1/devstoreaccount1/t");
    assert!(req.run().is_ok());
    let mut other = req.clone();
    other.method = "PUT".into();
    other.headers.remove("content-type");
    assert!(other.run().is_ok());
}

#[test]
fn comp_is_the_only_signed_query_parameter() {
    let req = Req::new(
        "GET",
        "/devstoreaccount1/",
        Some("restype=service&comp=properties&timeout=30"),
    )
    .header("x-ms-date", DATE)
    .sign_lite_with_resource(DATE, "/devstoreaccount1/devstoreaccount1/?comp=properties");
    assert!(req.run().is_ok());
    let mut extra = req.clone();
    extra.query = Some("comp=properties&$top=5".into());
    assert!(extra.run().is_ok());
    let mut no_comp = req.clone();
    no_comp.query = Some("restype=service".into());
    assert!(no_comp.run().is_err());
}

#[test]
fn secondary_endpoint_accepts_both_resource_forms() {
    let path = "/devstoreaccount1-secondary/mytable()";
    // Path style, signed by JS/.NET with "-secondary" in the resource.
    let js = Req::new("GET", path, None)
        .header("x-ms-date", DATE)
        .sign_lite_with_resource(
            DATE,
            "/devstoreaccount1/devstoreaccount1-secondary/mytable()",
        );
    assert!(js.run().is_ok());
    // Path style, signed with the primary name (spec form).
    let spec = Req::new("GET", path, None)
        .header("x-ms-date", DATE)
        .sign_lite_with_resource(DATE, "/devstoreaccount1/devstoreaccount1/mytable()");
    assert!(spec.run().is_ok());
    // The failure report shows the spec form.
    let bad = Req::new("GET", path, None)
        .header("x-ms-date", DATE)
        .header("authorization", "SharedKeyLite devstoreaccount1:AAAA");
    let e = bad.run().unwrap_err();
    assert_eq!(
        e.string_to_sign(),
        Some("Mon, 27 Jun 2016 15:25:14 GMT\n/devstoreaccount1/devstoreaccount1/mytable()")
    );
    // Host style on the secondary host, both forms.
    for resource in ["/devstoreaccount1/t()", "/devstoreaccount1-secondary/t()"] {
        let mut r = Req::new("GET", "/t()", None)
            .header("x-ms-date", DATE)
            .header("host", "devstoreaccount1-secondary.table.core.windows.net")
            .sign_lite_with_resource(DATE, resource);
        r.path_style = false;
        assert!(r.run().is_ok(), "{resource}");
    }
    // On the primary host the "-secondary" form is not accepted.
    let mut r = Req::new("GET", "/t()", None)
        .header("x-ms-date", DATE)
        .header("host", "devstoreaccount1.table.core.windows.net")
        .sign_lite_with_resource(DATE, "/devstoreaccount1-secondary/t()");
    r.path_style = false;
    assert!(r.run().is_err());
}

#[test]
fn unknown_account_and_account_mismatch() {
    let mut req = Req::new("GET", "/nobody/Tables", None)
        .header("x-ms-date", DATE)
        .header("authorization", "SharedKey nobody:AAAA");
    req.account = "nobody".into();
    assert_eq!(
        failure(req.run()),
        AuthFailure::UnknownAccount {
            account: "nobody".into()
        }
    );
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .header("authorization", "SharedKey someoneelse:AAAA");
    assert!(matches!(
        failure(req.run()),
        AuthFailure::AccountMismatch { .. }
    ));
}

#[test]
fn malformed_authorization_headers() {
    for value in [
        "SharedKey",
        "SharedKey ",
        "SharedKey devstoreaccount1",
        "SharedKey devstoreaccount1:",
        "SharedKey :c2ln",
        "SharedKey a:b:c",
        "SharedKeyLite devstoreaccount1:not*base64",
        "",
    ] {
        let req = Req::new("GET", "/devstoreaccount1/Tables", None)
            .header("x-ms-date", DATE)
            .header("authorization", value);
        let e = req.run().unwrap_err();
        assert_eq!(e.code(), "InvalidAuthenticationInfo", "{value:?}: {e:?}");
        assert_eq!(e.status(), 400, "{value:?}");
        assert_eq!(
            e.message(),
            "Authentication information is not given in the correct format. Check the value of Authorization header."
        );
    }
    // Two Authorization headers.
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .header("authorization", "SharedKey devstoreaccount1:AAAA")
        .header("authorization", "SharedKey devstoreaccount1:AAAA");
    assert_eq!(code(req.run()), "InvalidAuthenticationInfo");
    // Unknown scheme: AuthenticationFailed, as the service.
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .header("authorization", "Basic dXNlcjpwYXNz");
    let f = failure(req.run());
    assert_eq!(
        f.detail().unwrap(),
        "Authentication scheme Basic is not supported"
    );
}

#[test]
fn scheme_is_case_insensitive() {
    let req = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("x-ms-date", DATE)
        .header(
            "authorization",
            "sharedkeylite devstoreaccount1:0t5frBDAHUb3TEbAMT7v9wwgj+L4V00scNDQC6plt2w=",
        );
    assert!(req.run().is_ok());
}

#[test]
fn anonymous_requests_fail() {
    let req = Req::new("GET", "/devstoreaccount1/Tables", Some("$top=1"));
    let e = req.run().unwrap_err();
    assert!(e.is_anonymous());
    assert_eq!((e.code(), e.status()), ("AuthenticationFailed", 403));
    assert_eq!(e.authentication_error_detail(), None);
}

// ---------------------------------------------------------------------------------------
// Service SAS
// ---------------------------------------------------------------------------------------

const SAS_NOW: &str = "2024-01-01T12:00:00Z";

fn encode(value: &str) -> String {
    utf8_percent_encode(value, NON_ALPHANUMERIC).to_string()
}

fn query_of(pairs: &[(&str, &str)], sig: &str) -> String {
    let mut q: Vec<String> = pairs
        .iter()
        .map(|(n, v)| format!("{n}={}", encode(v)))
        .collect();
    q.push(format!("sig={}", encode(sig)));
    q.join("&")
}

fn get(pairs: &[(&str, &str)], name: &str) -> &'static str {
    pairs
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| &*Box::leak(v.to_string().into_boxed_str()))
        .unwrap_or("")
}

/// A service SAS query string signed with the dev key.
fn service_sas(pairs: &[(&str, &str)]) -> String {
    let f = ServiceSasFields {
        sp: get(pairs, "sp"),
        st: get(pairs, "st"),
        se: get(pairs, "se"),
        tn: get(pairs, "tn"),
        si: get(pairs, "si"),
        sip: get(pairs, "sip"),
        spr: get(pairs, "spr"),
        sv: get(pairs, "sv"),
        spk: get(pairs, "spk"),
        srk: get(pairs, "srk"),
        epk: get(pairs, "epk"),
        erk: get(pairs, "erk"),
    };
    let sig = compute_signature(&dev_key(), &service_sas_string_to_sign(ACCT, &f));
    query_of(pairs, &sig)
}

/// An account SAS query string signed with the dev key.
fn account_sas(pairs: &[(&str, &str)]) -> String {
    let f = AccountSasFields {
        sp: get(pairs, "sp"),
        ss: get(pairs, "ss"),
        srt: get(pairs, "srt"),
        st: get(pairs, "st"),
        se: get(pairs, "se"),
        sip: get(pairs, "sip"),
        spr: get(pairs, "spr"),
        sv: get(pairs, "sv"),
        ses: get(pairs, "ses"),
    };
    let sig = compute_signature(&dev_key(), &account_sas_string_to_sign(ACCT, &f));
    query_of(pairs, &sig)
}

fn sas_req(query: &str) -> Req {
    let mut r = Req::new("GET", "/devstoreaccount1/MyTable()", Some(query));
    r.now = t(SAS_NOW);
    r
}

const BASE: [(&str, &str); 4] = [
    ("sv", "2019-02-02"),
    ("tn", "MyTable"),
    ("sp", "raud"),
    ("se", "2024-01-02T00:00:00Z"),
];

fn with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<(&str, &str)> = BASE.to_vec();
    for (n, val) in extra {
        if let Some(slot) = v.iter_mut().find(|(k, _)| k == n) {
            slot.1 = val;
        } else {
            v.push((n, val));
        }
    }
    v
}

fn without(name: &str) -> Vec<(&'static str, &'static str)> {
    BASE.iter().copied().filter(|(n, _)| *n != name).collect()
}

fn grant(result: Result<Principal, AuthError>) -> SasGrant {
    match result {
        Ok(Principal::Sas(g)) => g,
        other => panic!("expected a SAS principal, got {other:?}"),
    }
}

#[test]
fn service_sas_spec_vector_as_request() {
    // The known-answer service SAS vector with tn in mixed case.
    let q = "sp=raud&st=2016-06-27T00:00:00Z&se=2016-06-28T00:00:00Z&spr=https,http&sv=2019-02-02&tn=MyTable&spk=pk1&epk=pk1&sig=Z1vvstBIbXA2g0L%2B6z0RwslY6Hb6LqpeA5%2BpGu7rFPk%3D";
    let mut r = sas_req(q);
    r.now = t("2016-06-27T12:00:00Z");
    let g = grant(r.run());
    assert_eq!(g.kind, SasKind::Service);
    assert_eq!(g.table_name.as_deref(), Some("MyTable"));
    assert!(g.allows_key("pk1", "anything"));
    assert!(!g.allows_key("pk2", ""));
    // An unescaped '+' in sig is kept as '+', not turned into a space.
    let raw_plus = q.replace("%2B", "+");
    let mut r = sas_req(&raw_plus);
    r.now = t("2016-06-27T12:00:00Z");
    assert!(r.run().is_ok());
}

#[test]
fn account_sas_spec_vector_as_request() {
    let q = "sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2016-06-28T00:00:00Z&spr=https,http&sig=tUBZobbSB1LaEYbuoPPqjh2379XeKQDkEUkk1im%2FeSM%3D";
    let mut r = sas_req(q);
    r.now = t("2016-06-27T12:00:00Z");
    let g = grant(r.run());
    assert_eq!(g.kind, SasKind::Account);
    assert!(g.key_range().is_unbounded());
}

#[test]
fn service_sas_time_window() {
    // Valid.
    assert!(sas_req(&service_sas(&BASE)).run().is_ok());
    // Expired: now == se.
    let mut r = sas_req(&service_sas(&BASE));
    r.now = t("2024-01-02T00:00:00Z");
    assert!(matches!(
        failure(r.run()),
        AuthFailure::SasNotValidInTimeFrame { .. }
    ));
    // Not yet valid.
    let q = service_sas(&with(&[("st", "2024-01-01T13:00:00Z")]));
    let f = failure(sas_req(&q).run());
    assert_eq!(
        f.detail().unwrap(),
        "Signature not valid in the specified time frame: Start [Mon, 01 Jan 2024 13:00:00 GMT] - Expiry [Tue, 02 Jan 2024 00:00:00 GMT] - Current [Mon, 01 Jan 2024 12:00:00 GMT]"
    );
    // Start after expiry.
    let q = service_sas(&with(&[("st", "2024-01-03")]));
    assert!(matches!(
        failure(sas_req(&q).run()),
        AuthFailure::SasExpiryBeforeStart { .. }
    ));
    // Date-only and minute forms are accepted.
    let q = service_sas(&with(&[("st", "2024-01-01"), ("se", "2024-01-01T13:00Z")]));
    assert!(sas_req(&q).run().is_ok());
    let q = service_sas(&with(&[("se", "2024-01-01T12:00:00.0000001Z")]));
    assert!(sas_req(&q).run().is_ok());
}

#[test]
fn service_sas_malformed_fields() {
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (without("tn"), "tn is mandatory. Cannot be empty"),
        (without("sv"), "sv is mandatory. Cannot be empty"),
        (without("sp"), "sp is mandatory. Cannot be empty"),
        (without("se"), "se is mandatory. Cannot be empty"),
        (with(&[("st", "")]), "st is optional but cannot be empty"),
        (with(&[("sp", "dr")]), "Signature fields not well formed."),
        (with(&[("sp", "rw")]), "Signature fields not well formed."),
        (with(&[("se", "tomorrow")]), "Signature fields not well formed."),
        (with(&[("spr", "http")]), "Signature fields not well formed."),
        (with(&[("sip", "1.2.3")]), "Signature fields not well formed."),
        (with(&[("srk", "a")]), "srk is required when spk is provided."),
        (with(&[("erk", "a")]), "erk is required when epk is provided."),
        (
            with(&[("sv", "2011-08-18")]),
            "sv is either not in the correct format or is not equal or later than version 2012-02-12",
        ),
        (
            with(&[("sv", "latest")]),
            "sv is either not in the correct format or is not equal or later than version 2012-02-12",
        ),
    ];
    for (pairs, detail) in cases {
        let q = service_sas(&pairs);
        let f = failure(sas_req(&q).run());
        assert_eq!(f.detail().as_deref(), Some(detail), "{pairs:?}");
    }
    // sig: missing, not base64, wrong size.
    let unsigned = service_sas(&BASE);
    let (body, _) = unsigned.rsplit_once("&sig=").unwrap();
    for (sig, detail) in [
        ("", "sig is mandatory. Cannot be empty"),
        ("!!!", "Signature fields not well formed."),
        ("AAAA", "Signature size is invalid"),
    ] {
        let q = format!("{body}&sig={sig}");
        let f = failure(sas_req(&q).run());
        assert_eq!(f.detail().as_deref(), Some(detail), "{sig}");
    }
}

#[test]
fn service_sas_signature_mismatch_detail() {
    let q = service_sas(&BASE).replace("sp=raud", "sp=rau");
    let e = sas_req(&q).run().unwrap_err();
    assert_eq!(
        e.authentication_error_detail().unwrap(),
        "Signature did not match. String to sign used was rau\n\n2024-01-02T00:00:00Z\n/table/devstoreaccount1/mytable\n\n\n\n2019-02-02\n\n\n\n"
    );
}

#[test]
fn service_sas_older_versions() {
    // 2013-08-15: no sip/spr in the string, resource without /table.
    let pairs = with(&[("sv", "2013-08-15")]);
    assert!(sas_req(&service_sas(&pairs)).run().is_ok());
    // A sip on an old version is neither signed nor enforced.
    let mut pairs = with(&[("sv", "2013-08-15")]);
    pairs.push(("sip", "10.0.0.1"));
    let q = service_sas(&with(&[("sv", "2013-08-15")])) + "&sip=10.0.0.1";
    assert!(sas_req(&q).run().is_ok(), "{pairs:?}");
    // 2015-02-21 (the /table prefix) and 2015-04-05 (sip/spr).
    for sv in ["2015-02-21", "2015-04-05", "2020-12-06"] {
        assert!(
            sas_req(&service_sas(&with(&[("sv", sv)]))).run().is_ok(),
            "{sv}"
        );
    }
}

#[test]
fn service_sas_protocol_and_ip() {
    let q = service_sas(&with(&[("spr", "https")]));
    let mut r = sas_req(&q);
    assert_eq!(code(r.run()), "AuthorizationProtocolMismatch");
    r.https = true;
    assert!(r.run().is_ok());
    let q = service_sas(&with(&[("spr", "https,http")]));
    assert!(sas_req(&q).run().is_ok());

    let q = service_sas(&with(&[("sip", "10.0.0.1-10.0.0.9")]));
    let mut r = sas_req(&q);
    for (ip, ok) in [
        ("10.0.0.1", true),
        ("10.0.0.9", true),
        ("10.0.0.10", false),
        ("9.255.255.255", false),
        ("::ffff:10.0.0.5", true),
    ] {
        r.ip = Some(ip.parse().unwrap());
        assert_eq!(r.run().is_ok(), ok, "{ip}");
    }
    r.ip = Some("10.0.0.10".parse().unwrap());
    let e = r.run().unwrap_err();
    assert_eq!(
        e.message(),
        "This request is not authorized to perform this operation using this source IP 10.0.0.10."
    );
    r.ip = None;
    assert_eq!(code(r.run()), "AuthorizationSourceIPMismatch");
    let q = service_sas(&with(&[("sip", "10.0.0.7")]));
    let mut r = sas_req(&q);
    r.ip = Some("10.0.0.7".parse().unwrap());
    assert!(r.run().is_ok());
}

/// One scheme per request: a SAS that is valid on its own does not rescue an `Authorization`
/// header, nor does the header make the SAS irrelevant (azure-sdk-for-net #46263).
#[test]
fn a_header_and_a_sas_together_are_refused() {
    for authorization in [
        "SharedKey devstoreaccount1:AAAA",
        "SharedKeyLite devstoreaccount1:AAAA",
        "Bearer e30.e30.c2ln",
    ] {
        let r = sas_req(&service_sas(&BASE))
            .header("authorization", authorization)
            .header("x-ms-date", "Mon, 01 Jan 2024 12:00:00 GMT");
        let err = r.run().expect_err(authorization);
        assert_eq!(
            (err.code(), err.status()),
            ("InvalidAuthenticationInfo", 400),
            "{authorization}"
        );
    }
    // Without the header the same SAS is accepted.
    assert!(sas_req(&service_sas(&BASE)).run().is_ok());
}

#[test]
fn sas_for_unknown_account() {
    let mut r = sas_req(&service_sas(&BASE));
    r.account = "nobody".into();
    assert!(matches!(
        failure(r.run()),
        AuthFailure::UnknownAccount { .. }
    ));
}

// Stored access policies ----------------------------------------------------------------

fn policy(start: Option<&str>, expiry: Option<&str>, perm: Option<&str>) -> AccessPolicy {
    AccessPolicy {
        start: start.map(str::to_string),
        expiry: expiry.map(str::to_string),
        permission: perm.map(str::to_string),
    }
}

struct OnePolicy(AccessPolicy);

impl PolicyLookup for OnePolicy {
    fn policy(&self, account: &str, table: &str, id: &str) -> Option<AccessPolicy> {
        (account == ACCT && table.eq_ignore_ascii_case("mytable") && id == "p1")
            .then(|| self.0.clone())
    }
}

fn si_pairs(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut v = vec![("sv", "2019-02-02"), ("tn", "MyTable"), ("si", "p1")];
    v.extend_from_slice(extra);
    v
}

#[test]
fn stored_policy_merges() {
    let opts = AuthOptions::default();
    // Policy supplies everything.
    let full = OnePolicy(policy(
        Some("2024-01-01T00:00:00.0000000Z"),
        Some("2024-01-02T00:00:00.0000000Z"),
        Some("ra"),
    ));
    let g = grant(sas_req(&service_sas(&si_pairs(&[]))).run_with(&full, &opts));
    assert_eq!(g.identifier.as_deref(), Some("p1"));
    assert!(g.permissions.read && g.permissions.add && !g.permissions.delete);
    assert_eq!(g.expiry, t("2024-01-02T00:00:00Z"));
    assert_eq!(g.start, Some(t("2024-01-01T00:00:00Z")));

    // SAS gives expiry and start, policy gives permission (in any order).
    let perm_only = OnePolicy(policy(None, None, Some("dr")));
    let q = service_sas(&si_pairs(&[
        ("st", "2024-01-01T00:00:00Z"),
        ("se", "2024-01-02T00:00:00Z"),
    ]));
    let g = grant(sas_req(&q).run_with(&perm_only, &opts));
    assert!(g.permissions.read && g.permissions.delete);

    // SAS gives permission, policy gives expiry.
    let expiry_only = OnePolicy(policy(None, Some("2024-01-02"), None));
    let q = service_sas(&si_pairs(&[("sp", "r")]));
    assert!(sas_req(&q).run_with(&expiry_only, &opts).is_ok());

    // The policy's window is enforced.
    let expired = OnePolicy(policy(None, Some("2024-01-01T11:00:00Z"), Some("r")));
    let q = service_sas(&si_pairs(&[]));
    assert!(matches!(
        failure(sas_req(&q).run_with(&expired, &opts)),
        AuthFailure::SasNotValidInTimeFrame { .. }
    ));
}

#[test]
fn stored_policy_conflicts_and_gaps() {
    let opts = AuthOptions::default();
    let full = OnePolicy(policy(Some("2024-01-01"), Some("2024-01-02"), Some("r")));
    for field in [
        ("st", "2024-01-01T00:00:00Z"),
        ("se", "2024-01-02T00:00:00Z"),
        ("sp", "r"),
    ] {
        let q = service_sas(&si_pairs(&[field]));
        let e = sas_req(&q).run_with(&full, &opts).unwrap_err();
        assert_eq!(
            e,
            AuthError::AuthenticationFailed(AuthFailure::PolicyFieldConflict),
            "{field:?}"
        );
        assert_eq!(e.status(), 400);
    }
    // Missing expiry in both.
    let perm_only = OnePolicy(policy(None, None, Some("r")));
    let q = service_sas(&si_pairs(&[]));
    assert_eq!(
        failure(sas_req(&q).run_with(&perm_only, &opts)),
        AuthFailure::PolicyExpiryMissing
    );
    // Missing permission in both.
    let expiry_only = OnePolicy(policy(None, Some("2024-01-02"), None));
    assert_eq!(
        failure(sas_req(&q).run_with(&expiry_only, &opts)),
        AuthFailure::PolicyPermissionMissing
    );
    // Unknown identifier (and the default lookup knows none).
    let q = service_sas(
        &si_pairs(&[])
            .into_iter()
            .map(|(n, v)| if n == "si" { (n, "nope") } else { (n, v) })
            .collect::<Vec<_>>(),
    );
    let f = failure(sas_req(&q).run_with(&full, &opts));
    assert_eq!(
        f.detail().unwrap(),
        "SAS identifier cannot be found for specified signed identifier"
    );
    assert!(matches!(
        failure(sas_req(&service_sas(&si_pairs(&[]))).run()),
        AuthFailure::PolicyNotFound { .. }
    ));
    // A closure works as a lookup.
    let closure = |_: &str, _: &str, id: &str| {
        (id == "p1").then(|| policy(None, Some("2024-01-02"), Some("r")))
    };
    assert!(sas_req(&service_sas(&si_pairs(&[])))
        .run_with(&closure, &opts)
        .is_ok());
}

// ---------------------------------------------------------------------------------------
// Account SAS
// ---------------------------------------------------------------------------------------

const ACCOUNT_BASE: [(&str, &str); 5] = [
    ("sv", "2019-02-02"),
    ("ss", "t"),
    ("srt", "sco"),
    ("sp", "rwdlacu"),
    ("se", "2024-01-02T00:00:00Z"),
];

fn account_with(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<(&str, &str)> = ACCOUNT_BASE.to_vec();
    for (n, val) in extra {
        if let Some(slot) = v.iter_mut().find(|(k, _)| k == n) {
            slot.1 = val;
        } else {
            v.push((n, val));
        }
    }
    v
}

#[test]
fn account_sas_rules() {
    assert!(sas_req(&account_sas(&ACCOUNT_BASE)).run().is_ok());
    // Any permission order [emu].
    assert!(sas_req(&account_sas(&account_with(&[("sp", "ucaldwr")])))
        .run()
        .is_ok());
    // Expired / not yet valid.
    let mut r = sas_req(&account_sas(&ACCOUNT_BASE));
    r.now = t("2024-01-02T00:00:00Z");
    assert!(r.run().is_err());
    let q = account_sas(&account_with(&[("st", "2024-01-01T12:00:01Z")]));
    assert!(sas_req(&q).run().is_err());
    // Malformed fields.
    for (pairs, detail) in [
        (account_with(&[("srt", "x")]), "Signature fields not well formed."),
        (account_with(&[("ss", "tz")]), "Signature fields not well formed."),
        (account_with(&[("sp", "rz")]), "Signature fields not well formed."),
        (account_with(&[("sp", "")]), "sp is mandatory. Cannot be empty"),
        (
            account_with(&[("sv", "2015-02-21")]),
            "sv is either not in the correct format or is not equal or later than version 2015-04-05",
        ),
    ] {
        let f = failure(sas_req(&account_sas(&pairs)).run());
        assert_eq!(f.detail().as_deref(), Some(detail), "{pairs:?}");
    }
    // Encryption scope is signed from 2020-12-06 on.
    let q = account_sas(&account_with(&[("sv", "2020-12-06"), ("ses", "scope1")]));
    let g = grant(sas_req(&q).run());
    assert_eq!(g.encryption_scope.as_deref(), Some("scope1"));
    let tampered = q.replace("ses=scope1", "ses=scope2");
    assert!(matches!(
        failure(sas_req(&tampered).run()),
        AuthFailure::SasSignatureMismatch { .. }
    ));
    // Protocol and IP.
    let q = account_sas(&account_with(&[("spr", "https"), ("sip", "192.168.0.10")]));
    let mut r = sas_req(&q);
    r.ip = Some("192.168.0.10".parse().unwrap());
    assert_eq!(code(r.run()), "AuthorizationProtocolMismatch");
    r.https = true;
    assert!(r.run().is_ok());
    r.ip = Some("192.168.0.11".parse().unwrap());
    assert_eq!(code(r.run()), "AuthorizationSourceIPMismatch");
}

// ---------------------------------------------------------------------------------------
// Authorization
// ---------------------------------------------------------------------------------------

use AuthzOperation as Op;

fn service_grant(sp: &str) -> Principal {
    let pairs = with(&[("sp", Box::leak(sp.to_string().into_boxed_str()))]);
    Principal::Sas(grant(sas_req(&service_sas(&pairs)).run()))
}

fn account_grant(ss: &str, srt: &str, sp: &str) -> Principal {
    let leak = |s: &str| -> &'static str { Box::leak(s.to_string().into_boxed_str()) };
    let pairs = account_with(&[("ss", leak(ss)), ("srt", leak(srt)), ("sp", leak(sp))]);
    Principal::Sas(grant(sas_req(&account_sas(&pairs)).run()))
}

fn outcome(p: &Principal, op: Op, table: Option<&str>) -> Result<(), &'static str> {
    p.authorize(op, table).map_err(|e| e.code())
}

#[test]
fn service_sas_permission_per_operation() {
    // (operation, the permission letters that allow it).
    let table: [(Op, &[&str]); 8] = [
        (Op::QueryEntities, &["r"]),
        (Op::GetEntity, &["r"]),
        (Op::InsertEntity, &["a"]),
        (Op::UpdateEntity, &["u"]),
        (Op::MergeEntity, &["u"]),
        (Op::DeleteEntity, &["d"]),
        (Op::InsertOrReplaceEntity, &["a", "u"]),
        (Op::InsertOrMergeEntity, &["a", "u"]),
    ];
    for (op, needed) in table {
        // All permissions: allowed.
        assert_eq!(
            outcome(&service_grant("raud"), op, Some("MyTable")),
            Ok(()),
            "{op:?}"
        );
        // Exactly the needed letters: allowed.
        let exact: String = "raud"
            .chars()
            .filter(|c| needed.contains(&c.to_string().as_str()))
            .collect();
        assert_eq!(
            outcome(&service_grant(&exact), op, Some("mytable")),
            Ok(()),
            "{op:?}"
        );
        // Every other single letter: permission mismatch.
        for letter in ["r", "a", "u", "d"] {
            if needed == [letter] {
                continue;
            }
            assert_eq!(
                outcome(&service_grant(letter), op, Some("MyTable")),
                Err("AuthorizationPermissionMismatch"),
                "{op:?} with {letter}"
            );
        }
        // Wrong table.
        assert_eq!(
            outcome(&service_grant("raud"), op, Some("Other")),
            Err("AuthorizationFailure"),
            "{op:?}"
        );
        assert_eq!(
            outcome(&service_grant("raud"), op, None),
            Err("AuthorizationFailure"),
            "{op:?}"
        );
    }
    // Never through a service SAS, whatever the permissions.
    for op in [
        Op::GetServiceProperties,
        Op::SetServiceProperties,
        Op::GetServiceStats,
        Op::QueryTables,
        Op::CreateTable,
        Op::DeleteTable,
        Op::GetTableAcl,
        Op::SetTableAcl,
    ] {
        assert_eq!(
            outcome(&service_grant("raud"), op, Some("MyTable")),
            Err("AuthorizationFailure"),
            "{op:?}"
        );
    }
    // $batch: table must match when known; sub-operations are checked separately.
    let p = service_grant("r");
    assert_eq!(outcome(&p, Op::Batch, Some("MyTable")), Ok(()));
    assert_eq!(outcome(&p, Op::Batch, None), Ok(()));
    assert_eq!(
        outcome(&p, Op::Batch, Some("x")),
        Err("AuthorizationFailure")
    );
}

#[test]
fn account_sas_per_operation() {
    // (operation, srt letter, permission letters any of which suffice, or all of which are
    // needed for upserts).
    let cases: [(Op, &str, &str); 15] = [
        (Op::GetServiceProperties, "s", "r"),
        (Op::SetServiceProperties, "s", "w"),
        (Op::GetServiceStats, "s", "r"),
        (Op::QueryTables, "c", "l"),
        (Op::CreateTable, "c", "c"),
        (Op::DeleteTable, "c", "d"),
        (Op::QueryEntities, "o", "r"),
        (Op::GetEntity, "o", "r"),
        (Op::InsertEntity, "o", "a"),
        (Op::UpdateEntity, "o", "u"),
        (Op::MergeEntity, "o", "u"),
        (Op::DeleteEntity, "o", "d"),
        (Op::InsertOrReplaceEntity, "o", "au"),
        (Op::InsertOrMergeEntity, "o", "au"),
        (Op::Batch, "o", "r"),
    ];
    for (op, srt, sp) in cases {
        let table = Some("MyTable");
        assert_eq!(
            outcome(&account_grant("t", srt, sp), op, table),
            Ok(()),
            "{op:?}"
        );
        assert_eq!(
            outcome(&account_grant("bqtf", "sco", "rwdlacup"), op, table),
            Ok(()),
            "{op:?}"
        );
        // Other resource types only.
        let others: String = "sco".chars().filter(|c| !srt.contains(*c)).collect();
        assert_eq!(
            outcome(&account_grant("t", &others, "rwdlacup"), op, table),
            Err("AuthorizationResourceTypeMismatch"),
            "{op:?}"
        );
        // Service without t.
        assert_eq!(
            outcome(&account_grant("bqf", "sco", "rwdlacup"), op, table),
            Err("AuthorizationServiceMismatch"),
            "{op:?}"
        );
        // Permissions without the needed letters.
        if op != Op::Batch {
            let rest: String = "rwdlacup".chars().filter(|c| !sp.contains(*c)).collect();
            let rest = if op == Op::CreateTable {
                rest.replace('w', "")
            } else {
                rest
            };
            assert_eq!(
                outcome(&account_grant("t", "sco", &rest), op, table),
                Err("AuthorizationPermissionMismatch"),
                "{op:?}"
            );
        }
    }
    // Create Table also with w.
    assert_eq!(
        outcome(&account_grant("t", "c", "w"), Op::CreateTable, None),
        Ok(())
    );
    // Upserts need both a and u.
    assert_eq!(
        outcome(
            &account_grant("t", "o", "a"),
            Op::InsertOrMergeEntity,
            Some("t")
        ),
        Err("AuthorizationPermissionMismatch")
    );
    // ACL operations never.
    for op in [Op::GetTableAcl, Op::SetTableAcl] {
        assert_eq!(
            outcome(&account_grant("t", "sco", "rwdlacup"), op, Some("MyTable")),
            Err("AuthorizationFailure")
        );
    }
}

#[test]
fn shared_key_and_bearer_may_do_everything() {
    let p = Principal::SharedKey {
        account: ACCT.into(),
    };
    for op in AuthzOperation::ALL {
        assert_eq!(p.authorize(op, Some("t")), Ok(()));
        assert_eq!(p.authorize(op, None), Ok(()));
    }
    assert_eq!(p.account(), ACCT);
    assert!(p.sas().is_none());
}

#[test]
fn secondary_endpoint_is_read_only() {
    for op in AuthzOperation::ALL {
        assert_eq!(op.check_secondary(false), Ok(()));
        let expected = if op.is_read_only() {
            Ok(())
        } else {
            Err(AuthError::InsufficientAccountPermissions)
        };
        assert_eq!(op.check_secondary(true), expected, "{op:?}");
    }
    assert!(Op::QueryEntities.is_read_only());
    assert!(!Op::Batch.is_read_only());
    assert!(!Op::SetTableAcl.is_read_only());
}

// ---------------------------------------------------------------------------------------
// Bearer
// ---------------------------------------------------------------------------------------

fn jwt(header: &str, payload: &str) -> String {
    format!(
        "{}.{}.c2lnbmF0dXJl",
        URL_SAFE_NO_PAD.encode(header),
        URL_SAFE_NO_PAD.encode(payload)
    )
}

const NOW_EPOCH: i64 = 1_704_110_400; // 2024-01-01T12:00:00Z

fn token(aud: &str, nbf: i64, exp: i64) -> String {
    jwt(
        r#"{"alg":"RS256","typ":"JWT"}"#,
        &format!(
            r#"{{"aud":{aud},"iss":"https://sts.windows.net/tid/","nbf":{nbf},"exp":{exp},"oid":"o1","tid":"tid","appid":"app"}}"#
        ),
    )
}

fn bearer_req(token: &str, https: bool) -> Req {
    let mut r = Req::new("GET", "/devstoreaccount1/Tables", None)
        .header("authorization", &format!("Bearer {token}"));
    r.https = https;
    r.now = t(SAS_NOW);
    r
}

#[test]
fn bearer_accepted_over_https_only() {
    let tok = token(
        r#""https://storage.azure.com""#,
        NOW_EPOCH - 60,
        NOW_EPOCH + 3600,
    );
    let p = bearer_req(&tok, true).run().unwrap();
    let Principal::Bearer { account, claims } = &p else {
        panic!("{p:?}")
    };
    assert_eq!(account, ACCT);
    assert_eq!(claims.object_id.as_deref(), Some("o1"));
    assert_eq!(claims.app_id.as_deref(), Some("app"));
    assert_eq!(claims.audience, "https://storage.azure.com");
    for op in AuthzOperation::ALL {
        assert_eq!(p.authorize(op, Some("t")), Ok(()));
    }
    let e = bearer_req(&tok, false).run().unwrap_err();
    assert_eq!((e.code(), e.status()), ("AuthenticationFailed", 403));
    assert_eq!(
        e.authentication_error_detail().unwrap(),
        "Authentication scheme Bearer is not allowed with HTTP."
    );
}

#[test]
fn bearer_lifetime_and_audience() {
    let ok_aud = r#""https://devstoreaccount1.table.core.windows.net/""#;
    // Audience list containing one storage audience.
    let tok = token(
        r#"["api://x","https://storage.azure.com/"]"#,
        NOW_EPOCH,
        NOW_EPOCH + 60,
    );
    assert!(bearer_req(&tok, true).run().is_ok());
    // No nbf at all is fine.
    let tok = jwt(
        r#"{"alg":"none"}"#,
        &format!(
            r#"{{"aud":{ok_aud},"iss":"https://login.microsoftonline.com/tid/v2.0","exp":{}}}"#,
            NOW_EPOCH + 60
        ),
    );
    assert!(bearer_req(&tok, true).run().is_ok());
    // No issuer, or one that is not Entra ID's: 401.
    for payload in [
        format!(r#"{{"aud":{ok_aud},"exp":{}}}"#, NOW_EPOCH + 60),
        format!(
            r#"{{"aud":{ok_aud},"iss":"https://issuer.example/","exp":{}}}"#,
            NOW_EPOCH + 60
        ),
    ] {
        let e = bearer_req(&jwt(r#"{"alg":"none"}"#, &payload), true)
            .run()
            .unwrap_err();
        assert_eq!((e.code(), e.status()), ("InvalidAuthenticationInfo", 401));
    }
    // Expired beyond the 5-minute skew / within it.
    let tok = token(ok_aud, NOW_EPOCH - 7200, NOW_EPOCH - 301);
    let e = bearer_req(&tok, true).run().unwrap_err();
    assert_eq!((e.code(), e.status()), ("InvalidAuthenticationInfo", 401));
    assert_eq!(
        e.authentication_error_detail().unwrap(),
        "Lifetime validation failed. The token is expired."
    );
    assert!(e.www_authenticate().is_some());
    let tok = token(ok_aud, NOW_EPOCH - 7200, NOW_EPOCH - 299);
    assert!(bearer_req(&tok, true).run().is_ok());
    // Not yet valid.
    let tok = token(ok_aud, NOW_EPOCH + 301, NOW_EPOCH + 7200);
    let e = bearer_req(&tok, true).run().unwrap_err();
    assert_eq!(
        e.authentication_error_detail().unwrap(),
        "Lifetime validation failed. The token is not yet valid."
    );
    // Wrong audiences.
    for aud in [
        r#""https://management.azure.com""#,
        r#""https://otheraccount.table.core.windows.net""#,
        r#"["api://x"]"#,
        "42",
    ] {
        let tok = token(aud, NOW_EPOCH, NOW_EPOCH + 60);
        let e = bearer_req(&tok, true).run().unwrap_err();
        assert_eq!(
            e.authentication_error_detail().unwrap(),
            "Audience validation failed. Audience did not match.",
            "{aud}"
        );
    }
}

#[test]
fn bearer_malformed_tokens() {
    let payload = format!(
        r#"{{"aud":"https://storage.azure.com","iss":"https://sts.windows.net/tid/","exp":{}}}"#,
        NOW_EPOCH + 60
    );
    for tok in [
        "abc".to_string(),
        "a.b".to_string(),
        "a.b.c.d".to_string(),
        format!("!!!.{}.sig", URL_SAFE_NO_PAD.encode(&payload)),
        jwt("[1,2]", &payload),
        jwt(r#"{"typ":"JWT"}"#, &payload),
        jwt(r#"{"alg":"RS256"}"#, "not json"),
        jwt(
            r#"{"alg":"RS256"}"#,
            r#"{"aud":"https://storage.azure.com"}"#,
        ),
        jwt(
            r#"{"alg":"RS256"}"#,
            r#"{"aud":"https://storage.azure.com","exp":"soon"}"#,
        ),
    ] {
        let e = bearer_req(&tok, true).run().unwrap_err();
        assert_eq!(
            (e.code(), e.status()),
            ("InvalidAuthenticationInfo", 400),
            "{tok}"
        );
    }
    // Padded base64url is tolerated.
    let padded = format!(
        "{}.{}.sig",
        base64::engine::general_purpose::URL_SAFE.encode(r#"{"alg":"RS256"}"#),
        base64::engine::general_purpose::URL_SAFE.encode(&payload)
    );
    assert!(bearer_req(&padded, true).run().is_ok());
}

#[test]
fn bearer_switch_and_unknown_account() {
    let tok = token(r#""https://storage.azure.com""#, NOW_EPOCH, NOW_EPOCH + 60);
    let off = AuthOptions {
        allow_bearer: false,
        ..AuthOptions::default()
    };
    let f = failure(bearer_req(&tok, true).run_with(&NoPolicies, &off));
    assert_eq!(
        f,
        AuthFailure::UnsupportedScheme {
            scheme: "Bearer".into()
        }
    );
    let mut r = bearer_req(&tok, true);
    r.account = "nobody".into();
    assert!(matches!(
        failure(r.run()),
        AuthFailure::UnknownAccount { .. }
    ));
}
