//! Set Table Service Properties body (XML), applied over the defaults, and the stored form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tablestore::protocol::service_properties::ServiceProperties;

fuzz_target!(|data: &[u8]| {
    if let Ok(props) = ServiceProperties::default().apply_update(data) {
        // What was accepted must survive its own encoding.
        let encoded = props.encode();
        assert!(ServiceProperties::decode(&encoded).is_some());
    }
});
