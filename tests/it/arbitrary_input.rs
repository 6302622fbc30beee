//! Every parser of untrusted input, fed arbitrary and structured-random input: it returns
//! (a value or an error) and never panics. The bounded, always-on counterpart of the
//! `fuzz/` targets (same entry points); the batch decoder's own property tests live in
//! `crates/protocol/src/protocol/batch/golden_tests.rs`, the stored-value codec's in
//! `crates/store/src/encoding/codec.rs`.
//!
//! TODO: add the `$filter` parser here and in `fuzz/` once it lands (`protocol::filter`).

use proptest::prelude::*;
use tablestore::auth::{self, Accounts, RequestView};
use tablestore::protocol::batch::decode_batch;
use tablestore::protocol::continuation::decode_token;
use tablestore::protocol::headers::{is_valid_version, negotiate_metadata, ReturnPreference};
use tablestore::protocol::json::{decode_entity, decode_table_name};
use tablestore::protocol::operation::{parse_operation, OperationHeaders};
use tablestore::protocol::service_properties::ServiceProperties;
use tablestore::protocol::uri::{parse_resource, split_account, QueryParams};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        ..ProptestConfig::default()
    }
}

/// Fragments that steer random JSON into the decoder's interesting paths.
fn json_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("\"PartitionKey\"".to_string()),
        Just("\"RowKey\"".to_string()),
        Just("\"Timestamp\"".to_string()),
        Just("\"a@odata.type\"".to_string()),
        Just("\"odata.etag\"".to_string()),
        Just("\"a\"".to_string()),
        Just("\"Edm.Int64\"".to_string()),
        Just("\"Edm.DateTime\"".to_string()),
        Just("\"Edm.Guid\"".to_string()),
        Just("\"Edm.Binary\"".to_string()),
        Just("\"Edm.Double\"".to_string()),
        Just("\"Edm.Boolean\"".to_string()),
        Just("\"NaN\"".to_string()),
        Just("\"-Infinity\"".to_string()),
        Just("\"2020-01-01T00:00:00Z\"".to_string()),
        Just("\"00000000-0000-0000-0000-000000000000\"".to_string()),
        Just("\"AAEC\"".to_string()),
        Just("\"\\ud800\"".to_string()),
        Just("null".to_string()),
        Just("true".to_string()),
        Just("1e400".to_string()),
        Just("-0".to_string()),
        Just("12345678901234567890".to_string()),
        "\"[ -~]{0,12}\"".prop_map(|s| s),
        "-?[0-9]{1,20}(\\.[0-9]{1,5})?".prop_map(|s| s),
    ]
}

fn xml_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<?xml version=\"1.0\" encoding=\"utf-8\"?>".to_string()),
        Just("<SignedIdentifiers>".to_string()),
        Just("</SignedIdentifiers>".to_string()),
        Just("<SignedIdentifier>".to_string()),
        Just("</SignedIdentifier>".to_string()),
        Just("<Id>".to_string()),
        Just("</Id>".to_string()),
        Just("<AccessPolicy>".to_string()),
        Just("</AccessPolicy>".to_string()),
        Just("<Start>2020-01-01T00:00:00Z</Start>".to_string()),
        Just("<Expiry>2099-01-01T00:00:00.0000000Z</Expiry>".to_string()),
        Just("<Permission>raud</Permission>".to_string()),
        Just("<StorageServiceProperties>".to_string()),
        Just("</StorageServiceProperties>".to_string()),
        Just("<Logging><Version>1.0</Version><Delete>true</Delete><Read>false</Read><Write>true</Write><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></Logging>".to_string()),
        Just("<HourMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></HourMetrics>".to_string()),
        Just("<Cors>".to_string()),
        Just("</Cors>".to_string()),
        Just("<CorsRule><AllowedOrigins>*</AllowedOrigins><AllowedMethods>GET,PUT</AllowedMethods><MaxAgeInSeconds>5</MaxAgeInSeconds><ExposedHeaders>x-ms-*</ExposedHeaders><AllowedHeaders>*</AllowedHeaders></CorsRule>".to_string()),
        Just("<![CDATA[x]]>".to_string()),
        Just("<!DOCTYPE a [<!ENTITY e \"x\">]>".to_string()),
        Just("&amp;&lt;&#0;&#xFFFF;&e;".to_string()),
        Just("<a/>".to_string()),
        Just("</a>".to_string()),
        "[ -~]{0,10}".prop_map(|s| s),
    ]
}

fn uri_fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("/".to_string()),
        Just("Tables".to_string()),
        Just("tbl".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("()".to_string()),
        Just("'".to_string()),
        Just("''".to_string()),
        Just(",".to_string()),
        Just("=".to_string()),
        Just("PartitionKey=".to_string()),
        Just("RowKey=".to_string()),
        Just("%27".to_string()),
        Just("%2C".to_string()),
        Just("%".to_string()),
        Just("%F0%9F%98%80".to_string()),
        Just("%FF".to_string()),
        Just("%00".to_string()),
        Just("$batch".to_string()),
        Just("..".to_string()),
        "[ -~]{0,6}".prop_map(|s| s),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn entity_json_arbitrary_bytes(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_entity(&body);
        let _ = decode_table_name(&body);
    }

    #[test]
    fn entity_json_structured(parts in prop::collection::vec(json_fragment(), 0..40)) {
        let body = parts.concat();
        let _ = decode_entity(body.as_bytes());
        let _ = decode_table_name(body.as_bytes());
        let wrapped = format!("{{\"PartitionKey\":\"p\",\"RowKey\":\"r\",{}}}", parts.concat());
        let _ = decode_entity(wrapped.as_bytes());
    }

    #[test]
    fn uri_arbitrary(path in ".{0,200}", query in proptest::option::of(".{0,200}"), host in proptest::option::of("[a-z0-9.:-]{0,40}")) {
        let _ = parse_resource(&path);
        let _ = QueryParams::parse(query.as_deref());
        let _ = split_account(host.as_deref(), &path, |a| a == "devstoreaccount1", true);
    }

    #[test]
    fn uri_structured(parts in prop::collection::vec(uri_fragment(), 0..30), method in prop_oneof![Just("GET"), Just("POST"), Just("PUT"), Just("MERGE"), Just("PATCH"), Just("DELETE"), Just("HEAD"), Just("OPTIONS"), Just("FOO")]) {
        let path = parts.concat();
        if let Ok(resource) = parse_resource(&path) {
            let query = QueryParams::parse(Some("comp=acl&restype=service")).unwrap_or_default();
            let _ = parse_operation(method, resource, &query, OperationHeaders {
                x_http_method: &["MERGE", "DELETE"],
                if_match: Some("W/\"datetime'2020-01-01T00%3A00%3A00Z'\""),
                if_none_match: Some("*"),
            });
        }
        let _ = QueryParams::parse(Some(&path));
    }

    #[test]
    fn acl_xml(parts in prop::collection::vec(xml_fragment(), 0..40), raw in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = auth::decode_signed_identifiers(parts.concat().as_bytes());
        let _ = auth::decode_signed_identifiers(&raw);
    }

    #[test]
    fn service_properties_xml(parts in prop::collection::vec(xml_fragment(), 0..40), raw in prop::collection::vec(any::<u8>(), 0..256)) {
        let base = ServiceProperties::default();
        let _ = base.apply_update(parts.concat().as_bytes());
        let _ = base.apply_update(&raw);
        let _ = ServiceProperties::decode(&raw);
    }

    #[test]
    fn headers_and_tokens(text in ".{0,80}") {
        let _ = decode_token(&text);
        let _ = is_valid_version(&text);
        let _ = ReturnPreference::parse(Some(&text));
        let _ = negotiate_metadata(Some(&text), Some(&text));
        let _ = negotiate_metadata(Some(&text), None);
        let _ = tablestore::auth::time::parse_http_date(&text);
        let _ = tablestore::auth::time::parse_iso8601(&text);
        let _ = tablestore::auth::canonical::parse_query(&text);
        let _ = tablestore::model::EdmDateTime::parse(&text);
        let _ = tablestore::model::edm::parse_guid(&text);
        let _ = Accounts::parse_azurite(&text);
    }

    /// The authenticator on arbitrary Authorization headers and SAS query strings.
    #[test]
    fn authentication(authorization in proptest::option::of("[ -~]{0,120}"), query in proptest::option::of("(sv|sig|se|st|sp|tn|spk|srk|epk|erk|sip|spr|ss|srt|si|[a-z]{1,3})=[ -~]{0,20}(&(sv|sig|se|st|sp|tn|spk|srk|epk|erk|sip|spr|ss|srt|si)=[ -%'-~]{0,20}){0,8}"), path in "/devstoreaccount1/[ -~]{0,30}") {
        let mut headers = http::HeaderMap::new();
        if let Some(a) = &authorization {
            if let Ok(v) = http::HeaderValue::from_str(a) {
                headers.insert(http::header::AUTHORIZATION, v);
            }
        }
        headers.insert("x-ms-date", http::HeaderValue::from_static("Mon, 27 Jun 2016 15:25:14 GMT"));
        let view = RequestView {
            method: "GET",
            raw_path: &path,
            raw_query: query.as_deref(),
            headers: &headers,
            account: "devstoreaccount1",
            path_style: true,
            is_https: false,
            client_ip: None,
            now: chrono::Utc::now(),
        };
        let _ = auth::authenticate(&view, &Accounts::dev());
    }

    #[test]
    fn batch_decoder_any_content_type(ct in ".{0,100}", body in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_batch(&ct, &body);
    }
}

/// Pathological sizes, once each: deep nesting, long runs.
#[test]
fn pathological_inputs_do_not_panic_or_hang() {
    let started = std::time::Instant::now();
    let deep_json = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    assert!(decode_entity(deep_json.as_bytes()).is_err());
    let deep_obj = "{\"a\":".repeat(100_000);
    assert!(decode_entity(deep_obj.as_bytes()).is_err());
    let deep_xml = "<a>".repeat(100_000);
    assert!(auth::decode_signed_identifiers(deep_xml.as_bytes()).is_err());
    assert!(ServiceProperties::default()
        .apply_update(deep_xml.as_bytes())
        .is_err());
    let billion_laughs = "<!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]><SignedIdentifiers><SignedIdentifier><Id>&c;</Id></SignedIdentifier></SignedIdentifiers>";
    let _ = auth::decode_signed_identifiers(billion_laughs.as_bytes());
    let _ = ServiceProperties::default().apply_update(billion_laughs.as_bytes());
    let parens = format!("tbl{}", "(".repeat(100_000));
    let _ = parse_resource(&parens);
    let quotes = format!("tbl(PartitionKey='{}',RowKey='a')", "'".repeat(100_001));
    let _ = parse_resource(&quotes);
    let amps = "&".repeat(100_000);
    let _ = QueryParams::parse(Some(&amps));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
