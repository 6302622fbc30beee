//! Get/Set Table Service Properties, Get Service Stats and CORS over HTTP.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;

const PROPS: &str = "/?restype=service&comp=properties";

const CORS_BODY: &str = "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Cors><CorsRule><AllowedOrigins>http://app.example</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods><MaxAgeInSeconds>500</MaxAgeInSeconds><ExposedHeaders>x-ms-*</ExposedHeaders><AllowedHeaders>x-ms-meta-*,content-type</AllowedHeaders></CorsRule></Cors></StorageServiceProperties>";

#[tokio::test]
async fn service_properties_default_set_and_partial_update() {
    let t = TestServer::start().await;
    let r = t.send("GET", PROPS, &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header("content-type"), Some("application/xml"));
    assert!(r.text().contains("<Cors></Cors>"), "{}", r.text());

    let r = t
        .send(
            "PUT",
            PROPS,
            &[("Content-Type", "application/xml")],
            Some(CORS_BODY),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    let logging = "<StorageServiceProperties><Logging><Version>1.0</Version><Delete>true</Delete><Read>true</Read><Write>false</Write><RetentionPolicy><Enabled>true</Enabled><Days>5</Days></RetentionPolicy></Logging></StorageServiceProperties>";
    let r = t.send("PUT", PROPS, &[], Some(logging)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let text = t.send("GET", PROPS, &[], None).await.text();
    assert!(
        text.contains("<AllowedOrigins>http://app.example</AllowedOrigins>"),
        "CORS kept: {text}"
    );
    assert!(
        text.contains("<Delete>true</Delete>") && text.contains("<Days>5</Days>"),
        "{text}"
    );
}

#[tokio::test]
async fn invalid_service_properties_get_storage_xml_error() {
    let t = TestServer::start().await;
    let days = CORS_BODY.replace("<Cors>", "<Logging><Version>1.0</Version><Delete>true</Delete><Read>true</Read><Write>false</Write><RetentionPolicy><Enabled>true</Enabled><Days>366</Days></RetentionPolicy></Logging><Cors>");
    for body in ["<not xml", days.as_str()] {
        let r = t.send("PUT", PROPS, &[], Some(body)).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert_eq!(r.header("x-ms-error-code"), Some("InvalidXmlDocument"));
        assert!(
            r.text().contains("<m:code>InvalidXmlDocument</m:code>"),
            "{}",
            r.text()
        );
    }
}

#[tokio::test]
async fn service_stats_reports_live_on_the_secondary() {
    let t = TestServer::start().await;
    // Azure offers the stats on the -secondary endpoint only (tests/it/client_shapes.rs checks
    // the primary's 400).
    let r = t.get_secondary("/?restype=service&comp=stats").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.text().contains("<Status>live</Status>"));
}

#[tokio::test]
async fn cors_preflight_and_actual_requests() {
    let t = TestServer::start().await;
    let pre = |origin: &'static str, method: &'static str| {
        vec![
            ("Origin", origin),
            ("Access-Control-Request-Method", method),
            ("Access-Control-Request-Headers", "x-ms-meta-a"),
        ]
    };
    let r = t
        .send(
            "OPTIONS",
            "/Tables",
            &pre("http://app.example", "GET"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "CORS disabled by default");
    assert_eq!(r.header("x-ms-error-code"), Some("CorsPreflightFailure"));
    t.send("PUT", PROPS, &[], Some(CORS_BODY)).await;
    let r = t
        .send(
            "OPTIONS",
            "/Tables",
            &pre("http://app.example", "GET"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("http://app.example")
    );
    assert_eq!(r.header("access-control-allow-methods"), Some("GET"));
    assert_eq!(r.header("access-control-max-age"), Some("500"));
    let r = t
        .send(
            "OPTIONS",
            "/Tables",
            &pre("http://app.example", "DELETE"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = t
        .send(
            "OPTIONS",
            "/Tables",
            &[("Origin", "http://app.example")],
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    let r = t
        .send("GET", "/Tables", &[("Origin", "http://app.example")], None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("http://app.example")
    );
    assert_eq!(r.header("access-control-expose-headers"), Some("x-ms-*"));
    let r = t
        .send(
            "GET",
            "/Tables",
            &[("Origin", "http://other.example")],
            None,
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::OK,
        "CORS never fails an actual request"
    );
    assert_eq!(r.header("access-control-allow-origin"), None);
    assert_eq!(r.header("vary"), Some("Origin"));
}

/// curl or wget at the root (`Accept: */*` or none, nothing an SDK sends) gets a few lines of
/// plain text pointing to the console and `/_health` (it was 400 InvalidUri in XML, while
/// README.md said the root points to the console).
#[tokio::test]
async fn curl_at_the_root_gets_a_plain_pointer() {
    let t = TestServer::start().await;
    let root = format!("{}/", t.server.endpoint());
    let host = root.trim_start_matches("http://").trim_end_matches('/');
    for accept in [Some("*/*"), None, Some("text/plain")] {
        let mut request = t.client.get(&root).header("User-Agent", "curl/8.5.0");
        if let Some(accept) = accept {
            request = request.header("Accept", accept);
        }
        let r = t.exchange(request).await;
        assert_eq!(r.status, StatusCode::OK, "{accept:?}");
        assert_eq!(
            r.headers.get("content-type").unwrap(),
            "text/plain; charset=utf-8"
        );
        let text = r.text();
        assert!(
            text.starts_with("This is an Azure Table storage endpoint"),
            "{text}"
        );
        assert!(
            text.contains(&format!("http://{host}/_tablestore/console/")),
            "{text}"
        );
        assert!(text.contains(&format!("http://{host}/_health")), "{text}");
    }
    // A query or a signature is a request for the service: Azure's answer.
    let r = t
        .exchange(t.client.get(format!("{root}?comp=properties")))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = t
        .exchange(t.client.get(&root).header("x-ms-version", "2019-02-02"))
        .await;
    assert_ne!(r.status, StatusCode::OK);
}

/// A browser opening the server's address (`GET /`, `Accept: text/html`, nothing an SDK
/// sends) gets a page pointing to the console; requests shaped like an SDK's keep Azure's
/// answer for the service root, 400 InvalidUri.
#[tokio::test]
async fn a_browser_at_the_root_is_pointed_to_the_console() {
    let t = TestServer::start().await;
    let root = format!("{}/", t.server.endpoint());
    let browser_accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let r = t
        .exchange(
            t.client
                .get(&root)
                .header("Accept", browser_accept)
                .header("User-Agent", "Mozilla/5.0 (X11; Linux x86_64) Chrome/126.0"),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.headers.get("content-type").unwrap(),
        "text/html; charset=utf-8"
    );
    let page = r.text();
    assert!(
        page.contains("<a href=\"/_tablestore/console/\">"),
        "{page}"
    );

    // An SDK's request for the root: signed and versioned, JSON or XML accepted.
    let (date, authorization) = common::sign_lite("/", None);
    for accept in [
        "application/json;odata=minimalmetadata",
        "application/xml",
        browser_accept,
    ] {
        let r = t
            .exchange(
                t.client
                    .get(&root)
                    .header("Accept", accept)
                    .header("x-ms-version", "2019-02-02")
                    .header("x-ms-date", &date)
                    .header("Authorization", &authorization),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{accept}");
        assert_eq!(
            r.headers.get("x-ms-error-code").unwrap(),
            "InvalidUri",
            "{accept}"
        );
    }
    // Unsigned JSON or XML: Azure's answer too.
    for accept in ["application/json;odata=nometadata", "application/xml"] {
        let r = t
            .exchange(t.client.get(&root).header("Accept", accept))
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{accept}");
    }
    let r = t
        .exchange(
            t.client
                .get(format!("{root}?comp=list"))
                .header("Accept", browser_accept),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    // With the console off the page says so.
    let mut config = tablestore::config::Config::for_tests();
    config.no_console = true;
    let t = TestServer::start_with(config).await;
    let page = t
        .exchange(
            t.client
                .get(format!("{}/", t.server.endpoint()))
                .header("Accept", browser_accept),
        )
        .await
        .text();
    assert!(page.contains("turned off"), "{page}");
}
