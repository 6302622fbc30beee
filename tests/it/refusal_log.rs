//! A refused request says why in the server's log, not on the wire: the answer stays Azure's
//! (most refusals are 403 `AuthenticationFailed` with one text), and the access-log line of
//! the refusal (`auth=denied`) names the cause; a signature mismatch adds the string-to-sign
//! the server computed at debug level. The servers run in process and their log is captured
//! on the test's thread (`common::logs`).

use crate::common;

use common::child::Signer;
use common::logs::CapturedLog;
use common::{request, Reply, Signing, TestServer};
use reqwest::StatusCode;
use tablestore::auth::canonical::{self, ServiceSasFields};
use tablestore::config::{Config, FlavorArg, DEV_ACCOUNT_KEY};

/// Sends `method` to `url` as `signing` signs it, with `headers`.
async fn send(
    t: &TestServer,
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    signing: Signing<'_>,
) -> Reply {
    let body = body.map(|b| b.as_bytes().to_vec());
    let req = request(&t.client, method, url, headers, body, signing);
    t.exchange(req).await
}

/// The access-log line of `r`, which must be a refusal marked `auth=denied`.
fn denied_line(log: &CapturedLog, r: &Reply) -> String {
    let id = r.header("x-ms-request-id").expect("request id");
    let line = log.request_line(id);
    assert!(line.contains("auth=denied"), "{line}");
    line
}

/// A service SAS of the development account for `tn`, as `fields` say (an unset `se` is
/// 2099; `sv` 2019-02-02).
fn service_sas(fields: ServiceSasFields<'_>) -> String {
    let se = if fields.se.is_empty() {
        "2099-01-01T00:00:00Z"
    } else {
        fields.se
    };
    Signer::dev().service_sas(&ServiceSasFields {
        se,
        sv: "2019-02-02",
        ..fields
    })
}

/// A key that is valid base64 but not the account's.
const WRONG_KEY: &str = "d3Jvbmcga2V5IGZvciB0aGUgZGV2ZWxvcG1lbnQgYWNjb3VudA==";

#[tokio::test]
async fn a_wrong_key_is_a_signature_mismatch_with_the_string_to_sign_at_debug() {
    let log = CapturedLog::start();
    let t = TestServer::start().await;
    let wrong = Signer::new("devstoreaccount1", WRONG_KEY);
    let url = format!("{}/Tables", t.base());
    let r = send(&t, "GET", &url, &[], None, Signing::As(&wrong)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.error_code(), "AuthenticationFailed");
    // The wire keeps Azure's text: the cause is the log's.
    assert!(!r.text().contains("mismatch"), "{}", r.text());
    let line = denied_line(&log, &r);
    assert!(line.contains("error=AuthenticationFailed"), "{line}");
    assert!(line.contains("cause=signature mismatch"), "{line}");
    assert!(
        !line.contains("string-to-sign the server computed:"),
        "{line}"
    );
    let id = r.header("x-ms-request-id").unwrap();
    let detail = log
        .text()
        .lines()
        .find(|l| l.contains("DEBUG") && l.contains(id) && l.contains("refusal detail"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no debug detail:\n{}", log.text()));
    // Shared Key Lite's string-to-sign: the date, then the canonicalized resource.
    assert!(
        detail.contains("string-to-sign the server computed: ")
            && detail.contains("\\n/devstoreaccount1/devstoreaccount1/Tables"),
        "{detail}"
    );
}

#[tokio::test]
async fn an_unknown_account_and_a_missing_account_segment_are_told_apart() {
    let log = CapturedLog::start();
    let t = TestServer::start().await;
    let endpoint = t.server.endpoint();
    let stranger = Signer::new("nosuchaccount", DEV_ACCOUNT_KEY);
    let url = format!("{endpoint}/nosuchaccount/Tables");
    let r = send(&t, "GET", &url, &[], None, Signing::As(&stranger)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.error_code(), "AuthenticationFailed");
    let line = denied_line(&log, &r);
    assert!(
        line.contains("account 'nosuchaccount' is not configured on this server")
            && line.contains("configured: devstoreaccount1"),
        "{line}"
    );
    // `TableEndpoint=http://127.0.0.1:port/` without `/devstoreaccount1`: the SDK signs for
    // the development account and the path starts with `/Tables`.
    let url = format!("{endpoint}/Tables");
    let r = send(&t, "GET", &url, &[], None, Signing::Dev).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.error_code(), "AuthenticationFailed");
    let line = denied_line(&log, &r);
    assert!(
        line.contains("signed for account 'devstoreaccount1'")
            && line.contains("lacks the account segment"),
        "{line}"
    );
    // Unsigned, the same URL is still recognised as a resource, not an account.
    let r = send(&t, "GET", &url, &[], None, Signing::None).await;
    let line = denied_line(&log, &r);
    assert!(
        line.contains("'Tables' is a resource, not an account"),
        "{line}"
    );
}

#[tokio::test]
async fn no_credentials_a_skewed_clock_and_a_foreign_scheme_each_say_so() {
    let log = CapturedLog::start();
    let t = TestServer::start().await;
    let url = format!("{}/Tables", t.base());
    let r = send(&t, "GET", &url, &[], None, Signing::None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(denied_line(&log, &r).contains("cause=no credentials"));

    // Signed correctly an hour ago.
    let date = (chrono::Utc::now() - chrono::Duration::hours(1))
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let dev = Signer::dev();
    let resource =
        canonical::canonicalized_resource(&dev.account, "/devstoreaccount1/Tables", None);
    let sts = canonical::shared_key_lite_string_to_sign(&date, &resource);
    let authorization = format!(
        "SharedKeyLite devstoreaccount1:{}",
        canonical::compute_signature(&dev.key, &sts)
    );
    let headers = [
        ("x-ms-date", date.as_str()),
        ("Authorization", authorization.as_str()),
    ];
    let r = send(&t, "GET", &url, &headers, None, Signing::None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.error_code(), "AuthenticationFailed");
    let line = denied_line(&log, &r);
    assert!(
        line.contains("cause=clock skew") && line.contains(&date) && line.contains("before"),
        "{line}"
    );

    // A bearer token without `--oauth`, and a scheme Azure does not know.
    for scheme in ["Bearer", "Digest"] {
        let authorization = format!("{scheme} abc");
        let headers = [("Authorization", authorization.as_str())];
        let r = send(&t, "GET", &url, &headers, None, Signing::None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{scheme}");
        let line = denied_line(&log, &r);
        assert!(
            line.contains(&format!("Authorization scheme '{scheme}' is not supported")),
            "{line}"
        );
    }
}

#[tokio::test]
async fn each_sas_refusal_names_what_the_sas_lacks() {
    let log = CapturedLog::start();
    let t = TestServer::with_table("people").await;
    let endpoint = t.server.endpoint();
    let url = |sas: &str| format!("{endpoint}/devstoreaccount1/people?{sas}");
    let entity = r#"{"PartitionKey":"p","RowKey":"r"}"#;
    let cases: Vec<(String, &str, &str, &str)> = vec![
        (
            service_sas(ServiceSasFields {
                tn: "people",
                sp: "r",
                se: "2020-01-01T00:00:00Z",
                ..Default::default()
            }),
            "GET",
            "AuthenticationFailed",
            "the SAS has expired: it ended at Wed, 01 Jan 2020 00:00:00 GMT (se)",
        ),
        (
            service_sas(ServiceSasFields {
                tn: "people",
                sp: "r",
                st: "2098-01-01T00:00:00Z",
                ..Default::default()
            }),
            "GET",
            "AuthenticationFailed",
            "the SAS is not valid yet",
        ),
        (
            service_sas(ServiceSasFields {
                tn: "people",
                sp: "r",
                ..Default::default()
            }),
            "POST",
            "AuthorizationPermissionMismatch",
            "the SAS's permissions sp=r lack what InsertEntity needs (a)",
        ),
        (
            service_sas(ServiceSasFields {
                tn: "others",
                sp: "raud",
                ..Default::default()
            }),
            "GET",
            "AuthorizationFailure",
            "the service SAS is for table 'others' (tn), not 'people'",
        ),
        (
            service_sas(ServiceSasFields {
                tn: "people",
                sp: "r",
                spr: "https",
                ..Default::default()
            }),
            "GET",
            "AuthorizationProtocolMismatch",
            "the SAS allows HTTPS only (spr=https)",
        ),
        (
            service_sas(ServiceSasFields {
                tn: "people",
                sp: "r",
                sip: "10.9.8.7",
                ..Default::default()
            }),
            "GET",
            "AuthorizationSourceIPMismatch",
            "the client address 127.0.0.1 is outside the SAS's sip range",
        ),
    ];
    for (sas, method, code, cause) in cases {
        let body = (method == "POST").then_some(entity);
        let r = send(&t, method, &url(&sas), &[], body, Signing::None).await;
        assert_eq!(r.error_code(), code, "{sas}: {}", r.text());
        let line = denied_line(&log, &r);
        assert!(line.contains(cause), "{cause}\n{line}");
    }
}

#[tokio::test]
async fn an_account_sas_names_the_service_or_resource_type_it_lacks() {
    let log = CapturedLog::start();
    let t = TestServer::start().await;
    let account_sas = |ss, srt| {
        Signer::dev().account_sas(&canonical::AccountSasFields {
            sp: "rl",
            ss,
            srt,
            se: "2099-01-01T00:00:00Z",
            spr: "https,http",
            sv: "2019-02-02",
            ..Default::default()
        })
    };
    let url = |sas: String| format!("{}/Tables?{sas}", t.base());
    for (sas, code, cause) in [
        (
            account_sas("t", "o"),
            "AuthorizationResourceTypeMismatch",
            "the account SAS's resource types (srt) do not cover this operation",
        ),
        (
            account_sas("b", "sco"),
            "AuthorizationServiceMismatch",
            "the account SAS's services (ss) do not include t (Table)",
        ),
    ] {
        let r = send(&t, "GET", &url(sas), &[], None, Signing::None).await;
        assert_eq!(r.error_code(), code, "{}", r.text());
        let line = denied_line(&log, &r);
        assert!(line.contains(cause), "{cause}\n{line}");
    }
}

/// Cosmos refuses `PATCH` with 405, as the SDKs send Merge to an endpoint they take for
/// Table storage (any host name but `localhost` and `.table.cosmos.` names): the log says so.
#[tokio::test]
async fn a_cosmos_405_to_patch_says_the_client_took_the_endpoint_for_storage() {
    let log = CapturedLog::start();
    let mut config = Config::for_tests();
    config.flavor = FlavorArg::Cosmos;
    let t = TestServer::start_with(config).await;
    let signer = Signer::new(
        tablestore::auth::accounts::COSMOS_EMULATOR_ACCOUNT_NAME,
        tablestore::auth::accounts::COSMOS_EMULATOR_ACCOUNT_KEY,
    );
    let url = format!(
        "{}/people(PartitionKey='p',RowKey='r')",
        t.server.endpoint()
    );
    let r = send(&t, "PATCH", &url, &[], Some("{}"), Signing::As(&signer)).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.error_code(), "MethodNotAllowed");
    assert!(!r.text().contains("Table storage"), "{}", r.text());
    let line = log.request_line(r.header("x-ms-request-id").unwrap());
    assert!(
        line.contains("status=405")
            && line.contains("refuses PATCH")
            && line.contains("took this endpoint for Azure Table storage")
            && line.contains(".table.cosmos."),
        "{line}"
    );
}

/// Requests that are let in log no cause.
#[tokio::test]
async fn an_answered_request_logs_no_cause() {
    let log = CapturedLog::start();
    let t = TestServer::start().await;
    let r = t.send("GET", "/Tables", &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    let line = log.request_line(r.header("x-ms-request-id").unwrap());
    assert!(line.contains("auth=SharedKey"), "{line}");
    assert!(!line.contains("cause="), "{line}");
}
