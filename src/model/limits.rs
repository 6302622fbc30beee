//! The service's documented limits on entities, keys and values (Azure docs: "Understanding the Table service data model").

use super::edm::utf16_len;
use super::entity::Property;

/// Custom properties per entity (255 including PartitionKey, RowKey and Timestamp).
pub const MAX_CUSTOM_PROPERTIES: usize = 252;
/// Entity size by the service's accounting formula.
pub const MAX_ENTITY_SIZE: usize = 1024 * 1024;
/// PartitionKey / RowKey length in UTF-16 code units.
pub const MAX_KEY_UTF16: usize = 1024;
/// String property length in UTF-16 code units (64 KiB).
pub const MAX_STRING_UTF16: usize = 32 * 1024;
/// Binary property length in bytes.
pub const MAX_BINARY_BYTES: usize = 64 * 1024;
/// Property name length in characters.
pub const MAX_PROPERTY_NAME: usize = 255;
/// Entities (or tables) per query page.
pub const MAX_PAGE_SIZE: usize = 1000;
/// Request body of a single-entity operation and of a `$batch`.
pub const MAX_REQUEST_BODY: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityLimitError {
    TooManyProperties,
    EntityTooLarge,
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

/// Checks the whole-entity limits (property count and total size).
pub fn check_entity(
    partition_key: &str,
    row_key: &str,
    properties: &[Property],
) -> Result<(), EntityLimitError> {
    if properties.len() > MAX_CUSTOM_PROPERTIES {
        return Err(EntityLimitError::TooManyProperties);
    }
    if entity_size(partition_key, row_key, properties) > MAX_ENTITY_SIZE {
        return Err(EntityLimitError::EntityTooLarge);
    }
    Ok(())
}
