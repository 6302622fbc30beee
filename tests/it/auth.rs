//! Authentication and authorization over HTTP: Shared Key Lite, refusals, SAS permissions and
//! key ranges, stored access policies (Get/Set Table ACL).

use crate::common;

use common::child::Signer;
use common::url::encode;
use common::TestServer;
use reqwest::StatusCode;
use serde_json::json;
use tablestore::auth::canonical::{compute_signature, ServiceSasFields};
use tablestore::config::{FlavorArg, DEV_ACCOUNT};

/// A service SAS query string for `table` (sv 2019-02-02, https,http); a stored policy `si`
/// replaces the permissions and times.
fn table_sas(table: &str, sp: &str, range: [&str; 4], si: &str) -> String {
    let (st, se) = ("2020-01-01T00:00:00Z", "2099-01-01T00:00:00Z");
    let (st, se, sp) = if si.is_empty() {
        (st, se, sp)
    } else {
        ("", "", "")
    };
    Signer::dev().service_sas(&ServiceSasFields {
        sp,
        st,
        se,
        tn: table,
        si,
        sip: "",
        spr: "https,http",
        sv: "2019-02-02",
        spk: range[0],
        srk: range[1],
        epk: range[2],
        erk: range[3],
    })
}

async fn unsigned_and_badly_signed_requests_are_refused(flavor: FlavorArg) {
    let t = TestServer::start_as(flavor).await;
    let r = t.send("GET", "/Tables", &[("x-unsigned", "1")], None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.error_code(), "AuthenticationFailed");
    let r = t
        .send(
            "GET",
            "/Tables",
            &[
                ("Authorization", "SharedKeyLite devstoreaccount1:AAAA"),
                ("x-ms-date", "Mon, 27 Jun 2016 15:25:14 GMT"),
            ],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = t
        .send("GET", "/Tables", &[("Authorization", "Garbage")], None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.error_code(), "InvalidAuthenticationInfo");
}

/// One scheme per request, as Azure: "The REST API doesn't allow two types of authentication
/// to be used when making requests" (azure-sdk-for-net #46263). A SAS with an `Authorization`
/// header is 400 `InvalidAuthenticationInfo` even when both would pass alone (Azurite accepts
/// the request when either passes; its REST tests send both).
#[tokio::test]
async fn a_sas_with_an_authorization_header_is_refused() {
    let t = TestServer::start().await;
    t.create_table("both").await;
    let read = table_sas("both", "r", ["", "", "", ""], "");
    let with_sas = format!("/both()?{read}");
    let r = t.send("GET", &with_sas, &[("x-unsigned", "1")], None).await;
    assert_eq!(r.status, StatusCode::OK, "the SAS alone: {}", r.text());
    let r = t.send("GET", "/both()", &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "the key alone: {}", r.text());
    let r = t.send("GET", &with_sas, &[], None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text());
    assert_eq!(r.error_code(), "InvalidAuthenticationInfo");
    // A header that would fail on its own gets the same answer, not 403.
    let r = t
        .send(
            "GET",
            &with_sas,
            &[
                ("x-unsigned", "1"),
                ("Authorization", "SharedKeyLite devstoreaccount1:AAAA"),
            ],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text());
    assert_eq!(r.error_code(), "InvalidAuthenticationInfo");
}

#[tokio::test]
async fn signature_mismatch_names_the_string_to_sign() {
    let t = TestServer::start().await;
    let date = chrono::Utc::now()
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let wrong = compute_signature(&Signer::dev().key, "something else");
    let r = t
        .send(
            "GET",
            "/Tables",
            &[
                ("x-ms-date", &date),
                (
                    "Authorization",
                    &format!("SharedKeyLite {DEV_ACCOUNT}:{wrong}"),
                ),
            ],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let message = r.json()["odata.error"]["message"]["value"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("/devstoreaccount1/devstoreaccount1/Tables"),
        "{message}"
    );
}

#[tokio::test]
async fn table_sas_permissions_and_key_ranges() {
    let t = TestServer::start().await;
    t.create_table("sastable").await;
    for pk in ["a", "b", "c"] {
        t.insert("sastable", &json!({"PartitionKey": pk, "RowKey": "1"}))
            .await;
    }
    let unsigned = [("x-unsigned", "1")];
    let read = table_sas("sastable", "r", ["", "", "", ""], "");
    let r = t
        .send(
            "GET",
            &format!("/sastable(PartitionKey='a',RowKey='1')?{read}"),
            &unsigned,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = t
        .send(
            "POST",
            &format!("/sastable?{read}"),
            &unsigned,
            Some(r#"{"PartitionKey":"x","RowKey":"1"}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.error_code(), "AuthorizationPermissionMismatch");
    let r = t
        .send("GET", &format!("/Tables?{read}"), &unsigned, None)
        .await;
    assert_eq!(
        r.status,
        StatusCode::FORBIDDEN,
        "a table SAS cannot list tables"
    );

    let ranged = table_sas("sastable", "ra", ["b", "", "b", ""], "");
    let r = t
        .send(
            "GET",
            &format!("/sastable(PartitionKey='b',RowKey='1')?{ranged}"),
            &unsigned,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = t
        .send(
            "GET",
            &format!("/sastable(PartitionKey='a',RowKey='1')?{ranged}"),
            &unsigned,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.error_code(), "AuthorizationFailure");
    let r = t
        .send(
            "POST",
            &format!("/sastable?{ranged}"),
            &unsigned,
            Some(r#"{"PartitionKey":"c","RowKey":"2"}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = t
        .send(
            "POST",
            &format!("/sastable?{ranged}"),
            &unsigned,
            Some(r#"{"PartitionKey":"b","RowKey":"2"}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);

    let other = table_sas("othertable", "raud", ["", "", "", ""], "");
    let r = t
        .send(
            "GET",
            &format!("/sastable(PartitionKey='a',RowKey='1')?{other}"),
            &unsigned,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "tn must match the table");
}

#[tokio::test]
async fn stored_access_policy_grants_and_revokes() {
    let t = TestServer::start().await;
    t.create_table("acltable").await;
    t.insert("acltable", &json!({"PartitionKey": "p", "RowKey": "1"}))
        .await;
    let r = t.send("GET", "/acltable?comp=acl", &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text().contains("<SignedIdentifiers"), "{}", r.text());
    let acl = "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers><SignedIdentifier><Id>readers</Id><AccessPolicy><Start>2020-01-01T00:00:00Z</Start><Expiry>2099-01-01T00:00:00Z</Expiry><Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>";
    let r = t
        .send(
            "PUT",
            "/acltable?comp=acl",
            &[("Content-Type", "application/xml")],
            Some(acl),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    let r = t.send("GET", "/acltable?comp=acl", &[], None).await;
    assert!(
        r.text().contains("<Id>readers</Id>")
            && r.text()
                .contains("<Expiry>2099-01-01T00:00:00.0000000Z</Expiry>"),
        "{}",
        r.text()
    );

    let sas = table_sas("acltable", "", ["", "", "", ""], "readers");
    let unsigned = [("x-unsigned", "1")];
    let r = t
        .send(
            "GET",
            &format!("/acltable(PartitionKey='p',RowKey='1')?{sas}"),
            &unsigned,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = t
        .send(
            "PUT",
            "/acltable?comp=acl",
            &[],
            Some("<SignedIdentifiers/>"),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = t
        .send(
            "GET",
            &format!("/acltable(PartitionKey='p',RowKey='1')?{sas}"),
            &unsigned,
            None,
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::FORBIDDEN,
        "revoking the policy revokes its tokens"
    );

    let six: String = (0..6)
        .map(|i| format!("<SignedIdentifier><Id>id{i}</Id><AccessPolicy><Permission>r</Permission></AccessPolicy></SignedIdentifier>"))
        .collect();
    let r = t
        .send(
            "PUT",
            "/acltable?comp=acl",
            &[],
            Some(&format!("<SignedIdentifiers>{six}</SignedIdentifiers>")),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.header("x-ms-error-code"), Some("InvalidXmlDocument"));
    let r = t.send("GET", "/nosuchtable?comp=acl", &[], None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn ranged_sas_queries_see_only_their_range_across_pages() {
    let t = TestServer::start().await;
    t.create_table("rangedq").await;
    for pk in ["a", "b", "c", "d", "e"] {
        for rk in ["1", "2", "3"] {
            t.insert("rangedq", &json!({"PartitionKey": pk, "RowKey": rk}))
                .await;
        }
    }
    let sas = table_sas("rangedq", "r", ["b", "2", "d", "1"], "");
    let unsigned = [("x-unsigned", "1")];
    let mut seen = Vec::new();
    let mut next: Option<(String, String)> = None;
    for _ in 0..20 {
        let mut path = format!("/rangedq()?{sas}&$top=2");
        if let Some((pk, rk)) = &next {
            path.push_str(&format!(
                "&NextPartitionKey={}&NextRowKey={}",
                encode(pk),
                encode(rk)
            ));
        }
        let r = t.send("GET", &path, &unsigned, None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        for e in r.json()["value"].as_array().unwrap() {
            seen.push(format!(
                "{}{}",
                e["PartitionKey"].as_str().unwrap(),
                e["RowKey"].as_str().unwrap()
            ));
        }
        next = match (
            r.header("x-ms-continuation-NextPartitionKey"),
            r.header("x-ms-continuation-NextRowKey"),
        ) {
            (Some(p), Some(rk)) => Some((p.to_string(), rk.to_string())),
            _ => None,
        };
        if next.is_none() {
            break;
        }
    }
    assert_eq!(seen, vec!["b2", "b3", "c1", "c2", "c3", "d1"]);
    let filtered = t
        .send(
            "GET",
            &format!(
                "/rangedq()?{sas}&$filter={}",
                encode("PartitionKey eq 'a' or RowKey eq '3'")
            ),
            &unsigned,
            None,
        )
        .await;
    let keys: Vec<String> = filtered.json()["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{}{}",
                e["PartitionKey"].as_str().unwrap(),
                e["RowKey"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        keys,
        vec!["b3", "c3"],
        "the filter is intersected with the SAS range"
    );
}

// The cases above whose behaviour is the same under both flavours, run under each.
both_flavours!(unsigned_and_badly_signed_requests_are_refused,);
