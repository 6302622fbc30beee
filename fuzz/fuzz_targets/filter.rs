//! `$filter` expressions: `protocol::filter::parse` on any text, and every accepted filter
//! prints (`Display`) to text that parses back to the same tree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tablestore::protocol::filter;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(expr) = filter::parse(&text) {
        let printed = expr.to_string();
        match filter::parse(&printed) {
            Ok(again) => assert_eq!(again, expr, "{text:?} printed as {printed:?}"),
            Err(e) => panic!("{text:?} printed as {printed:?}, which does not parse: {e:?}"),
        }
    }
    let _ = filter::parse_param(Some(&text));
});
