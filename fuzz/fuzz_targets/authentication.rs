//! Authentication of a request: the input's first line is the Authorization header (if any),
//! the second the query string (SAS), the third the path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tablestore::auth::{authenticate, Accounts, RequestView};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let authorization = lines.next().unwrap_or("");
    let query = lines.next();
    let path = lines.next().unwrap_or("/devstoreaccount1/Tables");
    let mut headers = http::HeaderMap::new();
    if let Ok(v) = http::HeaderValue::from_str(authorization) {
        if !authorization.is_empty() {
            headers.insert(http::header::AUTHORIZATION, v);
        }
    }
    headers.insert(
        "x-ms-date",
        http::HeaderValue::from_static("Mon, 27 Jun 2016 15:25:14 GMT"),
    );
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
});
