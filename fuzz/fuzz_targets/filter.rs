//! `$filter` expressions.
//!
//! TODO: the filter parser (`protocol::filter::parse`) is being written separately; once it
//! lands, fuzz it directly here (and check that an accepted filter prints and re-parses to
//! the same tree). Until then this target drives the `$filter` query parameter through the
//! query-string parser, which is all that touches the text today.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tablestore::protocol::uri::QueryParams;

fuzz_target!(|data: &[u8]| {
    let filter = String::from_utf8_lossy(data);
    let raw = format!("$filter={filter}&$top=5");
    if let Ok(q) = QueryParams::parse(Some(&raw)) {
        let _ = q.get("$filter");
    }
});
