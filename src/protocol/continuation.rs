//! Continuation tokens (`NextPartitionKey`, `NextRowKey`, `NextTableName`). Azure's are
//! opaque strings like `1!8!U21pdGg-`; ours have the same frame — `1!<length>!<data>` with
//! `<data>` the URL-safe unpadded base64 of the key text — so they survive any URL encoding.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

pub fn encode_token(key: &str) -> String {
    let data = URL_SAFE_NO_PAD.encode(key.as_bytes());
    format!("1!{}!{data}", data.len())
}

/// Decodes a token this server issued. `None` for anything malformed.
pub fn decode_token(token: &str) -> Option<String> {
    let rest = token.strip_prefix("1!")?;
    let (len, data) = rest.split_once('!')?;
    if len.parse::<usize>().ok()? != data.len() {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(data.trim_end_matches('=')).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_shape() {
        assert_eq!(encode_token("13"), "1!3!MTM");
        assert_eq!(decode_token("1!3!MTM").as_deref(), Some("13"));
        assert_eq!(decode_token("1!4!MTM"), None);
        assert_eq!(decode_token("garbage"), None);
    }

    proptest! {
        #[test]
        fn round_trip(s in ".*") {
            prop_assert_eq!(decode_token(&encode_token(&s)), Some(s));
        }
    }
}
