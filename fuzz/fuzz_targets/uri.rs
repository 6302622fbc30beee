//! Request URI: account resolution, resource path (key predicates, escaping), query string,
//! and the operation built from them. Input: `path?query` (the first `?` splits), and the
//! first byte picks the method.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tablestore::protocol::operation::{parse_operation, OperationHeaders};
use tablestore::protocol::uri::{parse_resource, split_account, QueryParams};

const METHODS: [&str; 8] = [
    "GET", "POST", "PUT", "MERGE", "PATCH", "DELETE", "HEAD", "OPTIONS",
];

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let (path, query) = match text.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (&*text, None),
    };
    let _ = split_account(
        Some("devstoreaccount1.table.localhost"),
        path,
        |a| a == "devstoreaccount1",
        true,
    );
    let _ = split_account(None, path, |_| true, true);
    let Ok(query) = QueryParams::parse(query) else {
        return;
    };
    if let Ok(resource) = parse_resource(path) {
        let method = METHODS[usize::from(first) % METHODS.len()];
        let _ = parse_operation(
            method,
            resource,
            &query,
            OperationHeaders {
                x_http_method: &[],
                if_match: Some("*"),
                if_none_match: None,
            },
        );
    }
});
