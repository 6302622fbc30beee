//! `$batch` multipart decoder: the first line of the input is the Content-Type header value,
//! the rest the body.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tablestore::protocol::batch::decode_batch;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let content_type = String::from_utf8_lossy(&data[..split]);
    let body = data.get(split + 1..).unwrap_or(&[]);
    let _ = decode_batch(&content_type, body);
    let _ = decode_batch("multipart/mixed; boundary=batch_b", data);
});
