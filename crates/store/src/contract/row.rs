//! Stored entities as the store lends them to a scan: [`StoredRow`] reads the keys and the
//! properties a filter names in place, without decoding the whole entity, and [`StoredRows`]
//! keeps the rows a page returns. These are the row types of the store contract; callers
//! never see the byte layout (`crate::encoding`) behind them.

use crate::model::{EdmDateTime, EdmValueRef, EntityView};

use crate::encoding::codec::RawEntity;
use crate::encoding::key::decode_entity_key;
use crate::StoreError;

/// One stored entity, borrowed from the store for the duration of a scan callback.
#[derive(Debug, Clone, Copy)]
pub struct StoredRow<'a> {
    key: &'a [u8],
    value: RawEntity<'a>,
    value_bytes: &'a [u8],
}

impl<'a> StoredRow<'a> {
    /// A row from its stored entity key and encoded value (see `crate::encoding`).
    pub(crate) fn new(key: &'a [u8], value: &'a [u8]) -> StoredRow<'a> {
        StoredRow {
            key,
            value: RawEntity::new(value),
            value_bytes: value,
        }
    }

    /// The bytes the row takes as stored (its key and value): what a page that keeps it holds.
    pub fn stored_len(&self) -> usize {
        self.key.len() + self.value_bytes.len()
    }

    /// (PartitionKey, RowKey); an error if the stored key is malformed.
    pub fn keys(&self) -> Result<(String, String), StoreError> {
        decode_entity_key(self.key).ok_or_else(|| StoreError::Corrupt("entity key".into()))
    }

    /// The entity's Timestamp, if the stored value is well formed.
    pub fn timestamp(&self) -> Option<EdmDateTime> {
        self.value.timestamp()
    }

    /// When the entity was created, if the stored value is well formed.
    pub fn created(&self) -> Option<EdmDateTime> {
        self.value.created()
    }

    /// The value of property `name`, read in place, if the entity has it.
    pub fn property(&self, name: &str) -> Option<EdmValueRef<'a>> {
        self.value.property(name)
    }

    /// The whole entity, its properties borrowed from the stored bytes.
    pub fn view(&self) -> Result<EntityView<'a>, StoreError> {
        let (partition_key, row_key) = self.keys()?;
        let (timestamp, properties) = self
            .value
            .properties()
            .ok_or_else(|| StoreError::Corrupt("entity".into()))?;
        Ok(EntityView {
            partition_key: partition_key.into(),
            row_key: row_key.into(),
            timestamp,
            properties,
        })
    }
}

/// Stored rows copied into one buffer (the store lends its bytes only during a scan).
#[derive(Debug, Default)]
pub struct StoredRows {
    bytes: Vec<u8>,
    /// Per row: where its key ends and its value ends in `bytes` (each starts where the
    /// previous one ended).
    ends: Vec<(usize, usize)>,
}

impl StoredRows {
    pub fn push(&mut self, row: &StoredRow<'_>) {
        self.bytes.extend_from_slice(row.key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(row.value_bytes);
        self.ends.push((key_end, self.bytes.len()));
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Keeps the first `n` rows (a page cut short, see `server::realism::cut_page`).
    pub fn truncate(&mut self, n: usize) {
        if n < self.ends.len() {
            let end = if n == 0 { 0 } else { self.ends[n - 1].1 };
            self.ends.truncate(n);
            self.bytes.truncate(end);
        }
    }

    /// The rows as entities that borrow their properties from the stored bytes.
    pub fn entities(&self) -> Result<Vec<EntityView<'_>>, StoreError> {
        self.iter().map(|row| row.view()).collect()
    }

    /// Each row, in the order it was pushed.
    pub fn iter(&self) -> impl Iterator<Item = StoredRow<'_>> {
        let mut start = 0;
        self.ends.iter().map(move |&(key_end, value_end)| {
            let row = StoredRow::new(&self.bytes[start..key_end], &self.bytes[key_end..value_end]);
            start = value_end;
            row
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{codec, key};
    use crate::model::{EdmValue, Property};

    #[test]
    fn rows_read_in_place_and_survive_the_copy() {
        let value = codec::encode_entity(
            EdmDateTime(7),
            &[Property {
                name: "n".into(),
                value: EdmValue::Int32(3),
            }],
        );
        let k = key::entity_key(1, "p\u{0}", "r");
        let row = StoredRow::new(&k, &value);
        assert_eq!(row.keys().unwrap(), ("p\u{0}".to_string(), "r".to_string()));
        assert_eq!(row.timestamp(), Some(EdmDateTime(7)));
        assert_eq!(row.property("n"), Some(EdmValueRef::Int32(3)));
        assert_eq!(row.property("m"), None);
        let mut rows = StoredRows::default();
        rows.push(&row);
        rows.push(&row);
        assert_eq!(rows.len(), 2);
        let views = rows.entities().unwrap();
        assert_eq!(views[1].row_key, "r");
        rows.truncate(1);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows.entities().unwrap()[0].row_key, "r");
        rows.truncate(0);
        assert!(rows.is_empty() && rows.entities().unwrap().is_empty());
        assert!(StoredRow::new(&k[..5], &value).keys().is_err());
        assert!(StoredRow::new(&k, &value[..3]).view().is_err());
    }
}
