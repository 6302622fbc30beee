//! Hostile XML bodies on the two operations that take XML, Set Table ACL and Set Table Service
//! Properties: a body over 64 KiB is refused unparsed with Azure's 413 `RequestBodyTooLarge`
//! (in the operations' XML error form), the largest document Azure's limits allow still fits,
//! and attributes and namespace declarations, which neither document has, are never read: a
//! tag full of them within the limit is parsed as if they were not there. Nothing is stored
//! from a refused body and the server stays healthy.

use crate::common;

use common::assert::{assert_alive, xml_error_code};
use common::{Reply, TestServer};
use reqwest::StatusCode;

const ACL: &str = "/xmltable?comp=acl";
const PROPS: &str = "/?restype=service&comp=properties";
/// The limit on both bodies (`model::limits::MAX_XML_BODY`).
const LIMIT: usize = 64 * 1024;

fn acl_document(root_attributes: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers{root_attributes}>\
         <SignedIdentifier><Id>readers</Id><AccessPolicy><Permission>r</Permission>\
         </AccessPolicy></SignedIdentifier></SignedIdentifiers>"
    )
}

fn properties_document(root_attributes: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties{root_attributes}>\
         <Logging><Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>false</Write>\
         <RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging>\
         </StorageServiceProperties>"
    )
}

/// ` a0="" a1="" …`: `n` distinct attribute names, the shape whose duplicate check was
/// quadratic before quick-xml 0.41 (RUSTSEC-2026-0194).
fn attributes(n: usize) -> String {
    (0..n).map(|i| format!(" a{i}=\"\"")).collect()
}

/// ` xmlns:p0="urn:p0" …`: `n` namespace declarations, the shape whose resolution allocated
/// without bound before quick-xml 0.41 (RUSTSEC-2026-0195).
fn namespace_declarations(n: usize) -> String {
    (0..n)
        .map(|i| format!(" xmlns:p{i}=\"urn:p{i}\""))
        .collect()
}

/// `doc` with whitespace after its prolog so that it is exactly `len` bytes long.
fn padded(doc: &str, len: usize) -> String {
    let split = doc.find("?>").expect("a prolog") + 2;
    let padding = len.checked_sub(doc.len()).expect("the document fits");
    format!("{}{}{}", &doc[..split], " ".repeat(padding), &doc[split..])
}

fn assert_too_large(r: &Reply) {
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", r.text());
    assert_eq!(r.header("x-ms-error-code"), Some("RequestBodyTooLarge"));
    assert_eq!(xml_error_code(r), "RequestBodyTooLarge");
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("application/xml")),
        "the operations' XML error form: {:?}",
        r.header("content-type")
    );
}

async fn put(t: &TestServer, path: &str, body: &str) -> Reply {
    t.send(
        "PUT",
        path,
        &[("Content-Type", "application/xml")],
        Some(body),
    )
    .await
}

async fn acl_text(t: &TestServer) -> String {
    let r = t.send("GET", ACL, &[], None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    r.text()
}

async fn logging_days(t: &TestServer) -> Option<String> {
    let text = t.send("GET", PROPS, &[], None).await.text();
    let start = text.find("<Logging>")?;
    let days = text[start..].find("<Days>")? + start + "<Days>".len();
    let end = text[days..].find('<')? + days;
    Some(text[days..end].to_string())
}

#[tokio::test]
async fn bodies_over_64_kib_are_refused_unparsed_and_64_kib_is_read() {
    let t = TestServer::with_table("xmltable").await;
    // Exactly at the limit: read and applied.
    let r = put(&t, ACL, &padded(&acl_document(""), LIMIT)).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert!(acl_text(&t).await.contains("<Id>readers</Id>"));
    let r = put(&t, PROPS, &padded(&properties_document(""), LIMIT)).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    assert_eq!(logging_days(&t).await.as_deref(), Some("7"));

    // One byte more: refused, and what was stored stays. Each document would be valid, so
    // the size alone refuses it.
    let other_acl = acl_document("").replace("readers", "writers");
    let r = put(&t, ACL, &padded(&other_acl, LIMIT + 1)).await;
    assert_too_large(&r);
    let stored = acl_text(&t).await;
    assert!(
        stored.contains("<Id>readers</Id>") && !stored.contains("writers"),
        "{stored}"
    );
    let other_props = properties_document("").replace("<Days>7</Days>", "<Days>9</Days>");
    let r = put(&t, PROPS, &padded(&other_props, LIMIT + 1)).await;
    assert_too_large(&r);
    assert_eq!(logging_days(&t).await.as_deref(), Some("7"));
    assert_alive(&t).await;
}

#[tokio::test]
async fn a_tag_with_tens_of_thousands_of_attributes_is_refused_unparsed() {
    let t = TestServer::with_table("xmltable").await;
    // 64,000 attributes on the root (the probe, ~700 KB) and 30,000 namespace
    // declarations: both far over the limit, so no parser sees them.
    for root_attributes in [attributes(64_000), namespace_declarations(30_000)] {
        let acl = acl_document(&root_attributes);
        assert!(acl.len() > 6 * LIMIT, "{}", acl.len());
        assert_too_large(&put(&t, ACL, &acl).await);
        assert_too_large(&put(&t, PROPS, &properties_document(&root_attributes)).await);
    }
    assert!(!acl_text(&t).await.contains("readers"), "nothing stored");
    assert_eq!(logging_days(&t).await, None, "nothing stored");
    assert_alive(&t).await;
}

#[tokio::test]
async fn attributes_and_namespace_declarations_within_the_limit_are_not_read() {
    let t = TestServer::with_table("xmltable").await;
    // As many as fit under the limit, on the root tag and on an inner one: the document
    // means what it means without them.
    let many = [attributes(6_000), namespace_declarations(2_500)];
    for root_attributes in &many {
        let acl =
            acl_document(root_attributes).replace("<Id>", &format!("<Id{}>", attributes(400)));
        assert!(acl.len() > LIMIT / 2 && acl.len() <= LIMIT, "{}", acl.len());
        let r = put(&t, ACL, &acl).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
        let stored = acl_text(&t).await;
        assert!(
            stored.ends_with(
                "<SignedIdentifiers><SignedIdentifier><Id>readers</Id><AccessPolicy>\
                 <Permission>r</Permission></AccessPolicy></SignedIdentifier></SignedIdentifiers>"
            ),
            "{stored}"
        );
        let props = properties_document(root_attributes);
        assert!(props.len() <= LIMIT, "{}", props.len());
        let r = put(&t, PROPS, &props).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
        assert_eq!(logging_days(&t).await.as_deref(), Some("7"));
    }
    assert_alive(&t).await;
}

#[tokio::test]
async fn the_largest_documents_azure_allows_fit_the_limit() {
    let t = TestServer::with_table("xmltable").await;
    // Five identifiers of 64 characters, each written as 4-byte UTF-8, with every policy
    // field, indented as an SDK pretty-prints.
    let identifiers: String = (0..5)
        .map(|i| {
            let id: String = std::iter::repeat_n('\u{1F600}', 63)
                .chain(char::from_digit(i, 10))
                .collect();
            format!(
                "\n  <SignedIdentifier>\n    <Id>{id}</Id>\n    <AccessPolicy>\n      \
                 <Start>2026-01-01T00:00:00.0000000Z</Start>\n      \
                 <Expiry>2099-12-31T23:59:59.9999999Z</Expiry>\n      \
                 <Permission>raud</Permission>\n    </AccessPolicy>\n  </SignedIdentifier>"
            )
        })
        .collect();
    let acl = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<SignedIdentifiers>{identifiers}\n\
         </SignedIdentifiers>"
    );
    let r = put(&t, ACL, &acl).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text());
    assert_eq!(acl_text(&t).await.matches("<SignedIdentifier>").count(), 5);

    // Five CORS rules with (together) under the 2 KiB of rule text the service allows, beside
    // logging and both metrics, every element on its own indented line.
    let rule = |i: usize| {
        let origins: Vec<String> = (0..6)
            .map(|j| format!("https://app{i}{j}.example{}", "x".repeat(34)))
            .collect();
        format!(
            "\n    <CorsRule>\n      <AllowedOrigins>{}</AllowedOrigins>\n      \
             <AllowedMethods>DELETE,GET,HEAD,MERGE,POST,OPTIONS,PUT</AllowedMethods>\n      \
             <MaxAgeInSeconds>86400</MaxAgeInSeconds>\n      \
             <ExposedHeaders>x-ms-meta-*</ExposedHeaders>\n      \
             <AllowedHeaders>x-ms-meta-*</AllowedHeaders>\n    </CorsRule>",
            origins.join(",")
        )
    };
    let metrics = |name: &str| {
        format!(
            "\n  <{name}>\n    <Version>1.0</Version>\n    <Enabled>true</Enabled>\n    \
             <IncludeAPIs>true</IncludeAPIs>\n    <RetentionPolicy>\n      \
             <Enabled>true</Enabled>\n      <Days>365</Days>\n    </RetentionPolicy>\n  </{name}>"
        )
    };
    let rules: String = (0..5).map(rule).collect();
    let props = format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<StorageServiceProperties>\n  <Logging>\n    \
         <Version>1.0</Version>\n    <Delete>true</Delete>\n    <Read>true</Read>\n    \
         <Write>true</Write>\n    <RetentionPolicy>\n      <Enabled>true</Enabled>\n      \
         <Days>365</Days>\n    </RetentionPolicy>\n  </Logging>{}{}\n  <Cors>{rules}\n  </Cors>\n\
         </StorageServiceProperties>",
        metrics("HourMetrics"),
        metrics("MinuteMetrics")
    );
    let r = put(&t, PROPS, &props).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text());
    let stored = t.send("GET", PROPS, &[], None).await.text();
    assert_eq!(stored.matches("<CorsRule>").count(), 5, "{stored}");
    // Both are far below the limit: it refuses padding, not documents.
    assert!(
        acl.len() < LIMIT / 16 && props.len() < LIMIT / 8,
        "{} {}",
        acl.len(),
        props.len()
    );
}
