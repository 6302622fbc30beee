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

/// Cosmos DB's entity continuation, as `x-ms-continuation-NextPartitionKey` carries it: a JSON
/// object `{"token":"<base64>","range":{"min":"","max":"FF"}}`, with `NextRowKey: NA` (the
/// Python SDK's Cosmos recording `test_query_entities_with_top_and_next`). Our `<base64>`
/// holds the position in the unordered result: the 8-byte order position (creation
/// instant or key hash, `query::unordered`), then the PartitionKey's
/// length (4 bytes, big-endian), the PartitionKey and the RowKey.
pub fn encode_cosmos_entity_token(position: u64, partition_key: &str, row_key: &str) -> String {
    use base64::engine::general_purpose::STANDARD;
    let mut data = Vec::with_capacity(12 + partition_key.len() + row_key.len());
    data.extend_from_slice(&position.to_be_bytes());
    data.extend_from_slice(&(partition_key.len() as u32).to_be_bytes());
    data.extend_from_slice(partition_key.as_bytes());
    data.extend_from_slice(row_key.as_bytes());
    // Written by hand to keep Cosmos's member order; base64 needs no JSON escaping.
    format!(
        r#"{{"token":"{}","range":{{"min":"","max":"FF"}}}}"#,
        STANDARD.encode(data)
    )
}

/// A Cosmos entity continuation that resumes at the start of the result: what follows a
/// first page cut to nothing by `--page-breaks` (Cosmos may answer a page with no entities
/// and a continuation: "Pagination in Azure Cosmos DB for NoSQL"). Its token holds no
/// position.
pub fn encode_cosmos_entity_start_token() -> String {
    r#"{"token":"","range":{"min":"","max":"FF"}}"#.to_string()
}

/// Where a Cosmos entity continuation resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CosmosEntityPosition {
    /// At the start ([`encode_cosmos_entity_start_token`]).
    Start,
    /// Past the row with this order position and keys ([`encode_cosmos_entity_token`]).
    After {
        position: u64,
        partition_key: String,
        row_key: String,
    },
}

/// `x-ms-continuation-NextRowKey` beside a Cosmos entity continuation.
pub const COSMOS_NEXT_ROW_KEY: &str = "NA";

/// Reads back [`encode_cosmos_entity_token`]'s and [`encode_cosmos_entity_start_token`]'s
/// tokens (bare, or wrapped in `[…]` as Cosmos's own next-page tokens are). `None` for
/// anything else.
pub fn decode_cosmos_entity_token(text: &str) -> Option<CosmosEntityPosition> {
    use base64::engine::general_purpose::STANDARD;
    let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    let object = match &value {
        serde_json::Value::Array(items) if items.len() == 1 => &items[0],
        other => other,
    };
    let data = STANDARD.decode(object.get("token")?.as_str()?).ok()?;
    if data.is_empty() {
        return Some(CosmosEntityPosition::Start);
    }
    let position = u64::from_be_bytes(data.get(..8)?.try_into().ok()?);
    let pk_len = u32::from_be_bytes(data.get(8..12)?.try_into().ok()?) as usize;
    let pk = data.get(12..12usize.checked_add(pk_len)?)?;
    let rk = data.get(12 + pk_len..)?;
    Some(CosmosEntityPosition::After {
        position,
        partition_key: String::from_utf8(pk.to_vec()).ok()?,
        row_key: String::from_utf8(rk.to_vec()).ok()?,
    })
}

/// Cosmos DB's table continuation (`x-ms-continuation-NextTableName`): URL-safe base64, as in
/// the recording `test_query_tables_with_marker` (`iJo2AMwO-10=`); ours holds the 8-byte order
/// hash and the table name (case-sensitive, as Cosmos names are).
pub fn encode_cosmos_table_token(hash: u64, name: &str) -> String {
    use base64::engine::general_purpose::URL_SAFE;
    let mut data = hash.to_be_bytes().to_vec();
    data.extend_from_slice(name.as_bytes());
    URL_SAFE.encode(data)
}

/// Reads back [`encode_cosmos_table_token`]'s token.
pub fn decode_cosmos_table_token(text: &str) -> Option<(u64, String)> {
    use base64::engine::general_purpose::URL_SAFE;
    let data = URL_SAFE.decode(text.trim()).ok()?;
    let hash = u64::from_be_bytes(data.get(..8)?.try_into().ok()?);
    Some((hash, String::from_utf8(data[8..].to_vec()).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn cosmos_tokens_round_trip() {
        let t = encode_cosmos_entity_token(42, "p\u{e9}", "r:1");
        assert!(t.starts_with("{\"token\":\""), "{t}");
        assert!(
            t.ends_with("\",\"range\":{\"min\":\"\",\"max\":\"FF\"}}"),
            "{t}"
        );
        let position = CosmosEntityPosition::After {
            position: 42,
            partition_key: "p\u{e9}".to_string(),
            row_key: "r:1".to_string(),
        };
        assert_eq!(decode_cosmos_entity_token(&t), Some(position.clone()));
        assert_eq!(
            decode_cosmos_entity_token(&format!("[{t}]")),
            Some(position)
        );
        assert_eq!(
            decode_cosmos_entity_token(&encode_cosmos_entity_start_token()),
            Some(CosmosEntityPosition::Start)
        );
        assert_eq!(decode_cosmos_entity_token("1!4!cGs-"), None);
        assert_eq!(decode_cosmos_entity_token("{\"token\":\"AAAA\"}"), None);
        let t = encode_cosmos_table_token(u64::MAX, "mytable");
        assert_eq!(
            decode_cosmos_table_token(&t),
            Some((u64::MAX, "mytable".to_string()))
        );
        assert_eq!(decode_cosmos_table_token("x"), None);
    }

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
