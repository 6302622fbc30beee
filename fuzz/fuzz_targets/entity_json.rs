//! JSON entity and table-name codec.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tablestore::protocol::json::{decode_entity, decode_table_name};

fuzz_target!(|data: &[u8]| {
    let _ = decode_entity(data);
    let _ = decode_table_name(data);
});
