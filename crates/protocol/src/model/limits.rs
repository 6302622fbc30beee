//! The service's documented limits on entities, keys and values (Azure docs: "Understanding
//! the Table service data model"), and the limit of a store that holds an entity as one JSON
//! item ("Azure Cosmos DB service quotas", per-item limits), chosen per write by
//! [`EntityLimits`] (the dialect chooses which, `protocol::dialect`).

use super::edm::{utf16_len, EdmValue};
use super::entity::Property;

/// Custom properties per entity (255 including PartitionKey, RowKey and Timestamp).
pub const MAX_CUSTOM_PROPERTIES: usize = 252;
/// Entity size by the service's accounting formula.
pub const MAX_ENTITY_SIZE: usize = 1024 * 1024;
/// PartitionKey / RowKey length in UTF-16 code units.
pub(crate) const MAX_KEY_UTF16: usize = 1024;
/// String property length in UTF-16 code units (64 KiB).
pub(crate) const MAX_STRING_UTF16: usize = 32 * 1024;
/// Binary property length in bytes.
pub(crate) const MAX_BINARY_BYTES: usize = 64 * 1024;
/// Property name length in characters.
pub(crate) const MAX_PROPERTY_NAME: usize = 255;
/// Entities (or tables) per query page.
pub const MAX_PAGE_SIZE: usize = 1000;
/// Request body of a single-entity operation and of a `$batch`.
pub const MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;
/// Request body of Set Table ACL and Set Table Service Properties. Azure documents no byte limit
/// for these two, only what they may hold (Azure docs: "Set Table ACL", at most five signed
/// identifiers of at most 64 characters; "Set Table Service Properties", at most five CORS rules
/// with 2 KiB of rule text): the largest such document is a few KiB (tests/it/hostile_xml.rs
/// builds it), so 64 KiB refuses only padding or markup that no valid document needs, before
/// it is parsed.
pub const MAX_XML_BODY: usize = 64 * 1024;

/// The largest JSON item: 2 MB, the "UTF-8 length of JSON representation" ("Azure Cosmos DB
/// service quotas", per-item limits), measured by [`json_item_size`].
pub const MAX_JSON_ITEM_BYTES: usize = 2 * 1024 * 1024;

/// Which limits an entity is held to: Table storage's accounted ones (1 MiB by its accounting
/// formula, 252 properties, 255-character names, 64 KiB values), or a JSON item's (2 MB of
/// JSON and "no practical limit" on the number of properties or the length of their names;
/// values unlimited but by the item, as Azure/azure-sdk-for-net#20533 found: a property over
/// 64 KiB is "No error" there).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum EntityLimits {
    #[default]
    Accounted,
    JsonItem,
}

impl EntityLimits {
    /// Whether a property name's length and a value's size are limited on their own (255
    /// characters and 64 KiB); a JSON item limits only the whole item.
    pub fn limits_each_property(self) -> bool {
        self == EntityLimits::Accounted
    }

    /// Whether an Insert Or Replace of an existing entity must keep its creation instant: a
    /// store of JSON items answers queries in creation order, and a replaced item keeps its
    /// place; the accounted store never shows the instant, so its upserts skip reading the
    /// entity they replace.
    pub fn upsert_keeps_creation(self) -> bool {
        self == EntityLimits::JsonItem
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityLimitError {
    TooManyProperties,
    EntityTooLarge,
    /// Over a JSON item's 2 MB.
    ItemTooLarge,
    /// The keys are within Azure's limits but longer together than the store can index
    /// (PostgreSQL's B-tree takes about 2.7 KB per key: only non-ASCII keys near the 1024
    /// UTF-16 unit limit reach it).
    KeysTooLongForStore,
}

impl std::fmt::Display for EntityLimitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EntityLimitError::TooManyProperties => "it would have more than 252 properties",
            EntityLimitError::EntityTooLarge => "it would be larger than 1 MiB",
            EntityLimitError::ItemTooLarge => "it would be larger than Cosmos DB's 2 MB item limit",
            EntityLimitError::KeysTooLongForStore => {
                "its keys together are longer than the store can index"
            }
        })
    }
}

/// Size of an entity as the service accounts it:
/// `4 + 2·(|PK|+|RK|) + Σ(8 + 2·|name| + size(value))`, lengths in UTF-16 code units.
pub fn entity_size(partition_key: &str, row_key: &str, properties: &[Property]) -> usize {
    4 + 2 * (utf16_len(partition_key) + utf16_len(row_key))
        + properties
            .iter()
            .map(|p| 8 + 2 * utf16_len(&p.name) + p.value.size_for_limit())
            .sum::<usize>()
}

/// Size of an entity as a JSON item, the UTF-8 length of its JSON: the text of
/// `{"PartitionKey":…,"RowKey":…,"<name>":<value>,…}` with the `@odata.type` annotation the
/// wire carries for the types JSON has no form of (Int64, DateTime, Guid, Binary), written
/// compactly. Cosmos DB's own encoding is not published; this is the representation its docs
/// name, as a client sends it.
pub fn json_item_size(partition_key: &str, row_key: &str, properties: &[Property]) -> usize {
    let member = |name: &str, value: usize| json_string_len(name) + 1 + value;
    let mut size = 2 + member("PartitionKey", json_string_len(partition_key));
    size += 1 + member("RowKey", json_string_len(row_key));
    for p in properties {
        size += 1 + member(&p.name, json_value_len(&p.value));
        if let Some(ty) = annotated_type(&p.value) {
            // `,"<name>@odata.type":"Edm.X"`
            size += 1 + json_string_len(&p.name) + "@odata.type".len() + 1 + ty.len() + 2;
        }
    }
    size
}

/// The `@odata.type` a value's JSON carries, for the types JSON cannot tell apart.
fn annotated_type(value: &EdmValue) -> Option<&'static str> {
    match value {
        EdmValue::Int64(_) => Some("Edm.Int64"),
        EdmValue::DateTime(_) => Some("Edm.DateTime"),
        EdmValue::Guid(_) => Some("Edm.Guid"),
        EdmValue::Binary(_) => Some("Edm.Binary"),
        EdmValue::String(_) | EdmValue::Int32(_) | EdmValue::Double(_) | EdmValue::Boolean(_) => {
            None
        }
    }
}

/// Length of a value's JSON text.
fn json_value_len(value: &EdmValue) -> usize {
    match value {
        EdmValue::String(s) => json_string_len(s),
        EdmValue::Int32(n) => n.to_string().len(),
        EdmValue::Int64(n) => n.to_string().len() + 2,
        EdmValue::Double(f) if f.is_finite() => format!("{f:?}").len(),
        // "NaN", "Infinity", "-Infinity", quoted.
        EdmValue::Double(f) if f.is_nan() => 5,
        EdmValue::Double(f) => 10 + usize::from(f.is_sign_negative()),
        EdmValue::Boolean(b) => 4 + usize::from(!b),
        EdmValue::DateTime(t) => t.text().as_str().len() + 2,
        EdmValue::Guid(_) => 38,
        EdmValue::Binary(b) => b.len().div_ceil(3) * 4 + 2,
    }
}

/// Length of `s` as a JSON string: quotes, two-character escapes for `"`, `\\` and the
/// common control characters, `\u00XX` for the other control characters.
fn json_string_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0C => 2,
            0x00..=0x1F => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// Checks Table storage's whole-entity limits (property count and total size).
pub fn check_entity(
    partition_key: &str,
    row_key: &str,
    properties: &[Property],
) -> Result<(), EntityLimitError> {
    check_entity_as(EntityLimits::Accounted, partition_key, row_key, properties)
}

/// Checks the whole-entity limits of `limits`: the property count and accounted size, or the
/// JSON item's size.
pub fn check_entity_as(
    limits: EntityLimits,
    partition_key: &str,
    row_key: &str,
    properties: &[Property],
) -> Result<(), EntityLimitError> {
    if limits == EntityLimits::JsonItem {
        if json_item_size(partition_key, row_key, properties) > MAX_JSON_ITEM_BYTES {
            return Err(EntityLimitError::ItemTooLarge);
        }
        return Ok(());
    }
    if properties.len() > MAX_CUSTOM_PROPERTIES {
        return Err(EntityLimitError::TooManyProperties);
    }
    if entity_size(partition_key, row_key, properties) > MAX_ENTITY_SIZE {
        return Err(EntityLimitError::EntityTooLarge);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::EdmDateTime;

    fn prop(name: &str, value: EdmValue) -> Property {
        Property {
            name: name.into(),
            value,
        }
    }

    /// The JSON item size is the length of the entity's compact JSON, annotations included.
    #[test]
    fn json_item_size_is_the_json_length() {
        let props = vec![
            prop("S", EdmValue::String("a\"b\\c\nd\u{1}é漢".into())),
            prop("I", EdmValue::Int32(-42)),
            prop("L", EdmValue::Int64(1234567890123)),
            prop("D", EdmValue::Double(2.5)),
            prop("N", EdmValue::Double(f64::NAN)),
            prop("Inf", EdmValue::Double(f64::NEG_INFINITY)),
            prop("B", EdmValue::Boolean(false)),
            prop(
                "T",
                EdmValue::DateTime(EdmDateTime::parse("2021-09-29T20:31:09.3447688Z").unwrap()),
            ),
            prop("G", EdmValue::Guid([7; 16])),
            prop("X", EdmValue::Binary(vec![1, 2, 3, 4])),
        ];
        let json = serde_json::json!({
            "PartitionKey": "p\"k",
            "RowKey": "r",
            "S": "a\"b\\c\nd\u{1}é漢",
            "I": -42,
            "L": "1234567890123", "L@odata.type": "Edm.Int64",
            "D": 2.5,
            "N": "NaN",
            "Inf": "-Infinity",
            "B": false,
            "T": "2021-09-29T20:31:09.3447688Z", "T@odata.type": "Edm.DateTime",
            "G": "07070707-0707-0707-0707-070707070707", "G@odata.type": "Edm.Guid",
            "X": "AQIDBA==", "X@odata.type": "Edm.Binary",
        });
        assert_eq!(json_item_size("p\"k", "r", &props), json.to_string().len());
    }

    #[test]
    fn a_json_item_limits_only_the_item() {
        let many: Vec<Property> = (0..300)
            .map(|i| prop(&format!("p{i}"), EdmValue::Int32(i)))
            .collect();
        assert_eq!(
            check_entity("p", "r", &many),
            Err(EntityLimitError::TooManyProperties)
        );
        assert_eq!(
            check_entity_as(EntityLimits::JsonItem, "p", "r", &many),
            Ok(())
        );
        // `{"PartitionKey":"p","RowKey":"r","s":"…"}` is 40 bytes and the text.
        let item = |n: usize| vec![prop("s", EdmValue::String("x".repeat(n)))];
        let fits = MAX_JSON_ITEM_BYTES - 40;
        assert_eq!(
            check_entity_as(EntityLimits::JsonItem, "p", "r", &item(fits)),
            Ok(())
        );
        assert_eq!(
            check_entity_as(EntityLimits::JsonItem, "p", "r", &item(fits + 1)),
            Err(EntityLimitError::ItemTooLarge)
        );
    }
}
