//! Set Table ACL body (`SignedIdentifiers` XML).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tablestore::auth::{decode_signed_identifiers, encode_signed_identifiers};

fuzz_target!(|data: &[u8]| {
    if let Ok(ids) = decode_signed_identifiers(data) {
        // What was accepted must decode again from its own encoding.
        let encoded = encode_signed_identifiers(&ids);
        assert!(decode_signed_identifiers(&encoded).is_ok());
    }
});
