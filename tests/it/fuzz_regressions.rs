//! Replays every input kept in `fuzz/regressions/<target>/` through the entry point of that
//! fuzz target (see `fuzz/README.md`): inputs that once crashed must keep being answered.

use std::path::Path;

use tablestore::auth::{authenticate, decode_signed_identifiers, Accounts, RequestView};
use tablestore::protocol::batch::decode_batch;
use tablestore::protocol::filter;
use tablestore::protocol::json::{decode_entity, decode_table_name};
use tablestore::protocol::service_properties::ServiceProperties;
use tablestore::protocol::uri::{parse_resource, split_account, QueryParams};

fn run_target(target: &str, data: &[u8]) {
    match target {
        "batch_decode" => {
            let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
            let ct = String::from_utf8_lossy(&data[..split]);
            let _ = decode_batch(&ct, data.get(split + 1..).unwrap_or(&[]));
            let _ = decode_batch("multipart/mixed; boundary=batch_b", data);
        }
        "entity_json" => {
            let _ = decode_entity(data);
            let _ = decode_table_name(data);
        }
        "filter" => {
            let text = String::from_utf8_lossy(data);
            if let Ok(expr) = filter::parse(&text) {
                assert_eq!(filter::parse(&expr.to_string()).as_ref(), Ok(&expr));
            }
        }
        "uri" => {
            let text = String::from_utf8_lossy(data);
            let (path, query) = match text.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (&*text, None),
            };
            let _ = split_account(None, path, |_| true, true);
            let _ = parse_resource(path);
            let _ = QueryParams::parse(query);
        }
        "service_properties_xml" => {
            if let Ok(p) = ServiceProperties::default().apply_update(data) {
                assert!(ServiceProperties::decode(&p.encode()).is_some());
            }
        }
        "acl_xml" => {
            if let Ok(ids) = decode_signed_identifiers(data) {
                let encoded = tablestore::auth::encode_signed_identifiers(&ids);
                assert!(decode_signed_identifiers(&encoded).is_ok());
            }
        }
        "authentication" => {
            let text = String::from_utf8_lossy(data);
            let mut lines = text.split('\n');
            let authorization = lines.next().unwrap_or("");
            let query = lines.next();
            let path = lines.next().unwrap_or("/devstoreaccount1/Tables");
            let mut headers = http::HeaderMap::new();
            if let Ok(v) = http::HeaderValue::from_str(authorization) {
                headers.insert(http::header::AUTHORIZATION, v);
            }
            let view = RequestView {
                method: "GET",
                raw_path: path,
                raw_query: query,
                headers: &headers,
                account: "devstoreaccount1",
                path_style: true,
                is_https: false,
                client_ip: None,
                now: chrono::Utc::now(),
            };
            let _ = authenticate(&view, &Accounts::dev());
        }
        other => panic!("unknown fuzz target folder {other}"),
    }
}

#[test]
fn kept_fuzz_inputs_are_handled() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    let mut count = 0;
    for target in std::fs::read_dir(&root).expect("fuzz/regressions") {
        let target = target.expect("entry").path();
        let name = target
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_string();
        for input in std::fs::read_dir(&target).expect("target folder") {
            let input = input.expect("entry").path();
            let data = std::fs::read(&input).expect("input");
            run_target(&name, &data);
            count += 1;
        }
    }
    assert!(count > 0, "no regression inputs found");
    println!("{count} kept fuzz inputs replayed");
}
