//! Versioned binary encoding of stored values: entities (Timestamp, creation instant, typed
//! properties) and table metadata. Keys live in `key.rs`; PartitionKey and RowKey are not
//! repeated here. Decoding never panics: bad bytes give `None`, which the store reports as
//! corruption.
//!
//! An entity's header is its format byte and Timestamp; `ENTITY_V2` adds the instant the entity
//! was created (what Cosmos DB for Table answers queries in the order of), and is written only
//! when that differs from the Timestamp, so an entity never changed since its creation is
//! stored byte for byte as before. A `ENTITY_V1` value reads as created at its Timestamp.

use crate::model::{EdmDateTime, EdmValue, EdmValueRef, Property};

const ENTITY_V1: u8 = 1;
/// `ENTITY_V1` with the creation instant (8 bytes, little-endian ticks) after the Timestamp.
const ENTITY_V2: u8 = 2;
/// The bytes of the longest entity header before the property count: format, Timestamp,
/// creation instant. A prefix this long is enough for [`decode_entity_created`].
pub(crate) const ENTITY_STAMPS_LEN: usize = 17;
const TABLE_V1: u8 = 1;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).and_then(|b| b.try_into().ok())
    }
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.varint()?).ok()?;
        self.take(n)
    }
    fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }
    /// One property value: its type tag, then the value.
    fn value(&mut self) -> Option<RawValue<'a>> {
        Some(match self.u8()? {
            0 => RawValue::String(self.str()?),
            1 => RawValue::Int32(i32::from_le_bytes(self.array()?)),
            2 => RawValue::Int64(i64::from_le_bytes(self.array()?)),
            3 => RawValue::Double(f64::from_bits(u64::from_le_bytes(self.array()?))),
            4 => RawValue::Boolean(self.u8()? != 0),
            5 => RawValue::DateTime(EdmDateTime(i64::from_le_bytes(self.array()?))),
            6 => RawValue::Guid(self.array()?),
            7 => RawValue::Binary(self.bytes()?),
            _ => return None,
        })
    }
    /// The entity's Timestamp and creation instant: the header before the property count.
    fn entity_stamps(&mut self) -> Option<EntityStamps> {
        let version = self.u8()?;
        let timestamp = EdmDateTime(i64::from_le_bytes(self.array()?));
        let created = match version {
            ENTITY_V1 => timestamp,
            ENTITY_V2 => EdmDateTime(i64::from_le_bytes(self.array()?)),
            _ => return None,
        };
        Some(EntityStamps { timestamp, created })
    }
    /// The entity header: format version, Timestamp (and creation instant), property count.
    fn entity_header(&mut self) -> Option<(EdmDateTime, usize)> {
        let stamps = self.entity_stamps()?;
        let count = usize::try_from(self.varint()?).ok()?;
        Some((stamps.timestamp, count))
    }
}

/// An entity's two instants: its Timestamp (its last write) and when it was created (its
/// first write since it last did not exist).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EntityStamps {
    pub(crate) timestamp: EdmDateTime,
    pub(crate) created: EdmDateTime,
}

impl EntityStamps {
    /// The instants of an entity written for the first time at `timestamp`.
    pub(crate) fn new_at(timestamp: EdmDateTime) -> EntityStamps {
        EntityStamps {
            timestamp,
            created: timestamp,
        }
    }
}

/// An entity created at its Timestamp (see [`encode_entity_stamped`]).
pub fn encode_entity(timestamp: EdmDateTime, properties: &[Property]) -> Vec<u8> {
    encode_entity_stamped(EntityStamps::new_at(timestamp), properties)
}

/// An entity with its Timestamp and creation instant: `ENTITY_V1` when they are equal.
pub(crate) fn encode_entity_stamped(stamps: EntityStamps, properties: &[Property]) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + properties.len() * 24);
    if stamps.created == stamps.timestamp {
        out.push(ENTITY_V1);
        out.extend_from_slice(&stamps.timestamp.0.to_le_bytes());
    } else {
        out.push(ENTITY_V2);
        out.extend_from_slice(&stamps.timestamp.0.to_le_bytes());
        out.extend_from_slice(&stamps.created.0.to_le_bytes());
    }
    put_varint(&mut out, properties.len() as u64);
    for p in properties {
        put_bytes(&mut out, p.name.as_bytes());
        match &p.value {
            EdmValue::String(s) => {
                out.push(0);
                put_bytes(&mut out, s.as_bytes());
            }
            EdmValue::Int32(v) => {
                out.push(1);
                out.extend_from_slice(&v.to_le_bytes());
            }
            EdmValue::Int64(v) => {
                out.push(2);
                out.extend_from_slice(&v.to_le_bytes());
            }
            EdmValue::Double(v) => {
                out.push(3);
                out.extend_from_slice(&v.to_bits().to_le_bytes());
            }
            EdmValue::Boolean(v) => {
                out.push(4);
                out.push(u8::from(*v));
            }
            EdmValue::DateTime(v) => {
                out.push(5);
                out.extend_from_slice(&v.0.to_le_bytes());
            }
            EdmValue::Guid(v) => {
                out.push(6);
                out.extend_from_slice(v);
            }
            EdmValue::Binary(v) => {
                out.push(7);
                put_bytes(&mut out, v);
            }
        }
    }
    out
}

/// Reads only the Timestamp of an encoded entity.
pub(crate) fn decode_entity_timestamp(bytes: &[u8]) -> Option<EdmDateTime> {
    decode_entity_stamps(bytes).map(|s| s.timestamp)
}

/// Reads only the Timestamp and creation instant of an encoded entity (the first
/// [`ENTITY_STAMPS_LEN`] bytes are enough).
pub(crate) fn decode_entity_stamps(bytes: &[u8]) -> Option<EntityStamps> {
    Reader { buf: bytes }.entity_stamps()
}

pub fn decode_entity(bytes: &[u8]) -> Option<(EdmDateTime, Vec<Property>)> {
    let raw = RawEntity::new(bytes);
    let (timestamp, properties) = raw.properties()?;
    let properties = properties
        .into_iter()
        .map(|(name, value)| Property {
            name: name.to_string(),
            value: value.to_owned_value(),
        })
        .collect();
    Some((timestamp, properties))
}

/// Table metadata as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableRecord {
    pub(crate) id: u64,
    /// The name with the casing used at creation.
    pub(crate) name: String,
    /// Stored access policies, opaque to the store (the auth layer's encoding).
    pub(crate) acl: Vec<u8>,
}

pub(crate) fn encode_table(record: &TableRecord) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + record.name.len() + record.acl.len());
    out.push(TABLE_V1);
    out.extend_from_slice(&record.id.to_le_bytes());
    put_bytes(&mut out, record.name.as_bytes());
    put_bytes(&mut out, &record.acl);
    out
}

pub(crate) fn decode_table(bytes: &[u8]) -> Option<TableRecord> {
    let mut r = Reader { buf: bytes };
    if r.u8()? != TABLE_V1 {
        return None;
    }
    let id = u64::from_le_bytes(r.array()?);
    let name = r.str()?.to_string();
    let acl = r.bytes()?.to_vec();
    r.buf.is_empty().then_some(TableRecord { id, name, acl })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Vec<Property> {
        let p = |name: &str, value| Property {
            name: name.to_string(),
            value,
        };
        vec![
            p("s", EdmValue::String("héllo".into())),
            p("i", EdmValue::Int32(-5)),
            p("l", EdmValue::Int64(i64::MIN)),
            p("d", EdmValue::Double(f64::NEG_INFINITY)),
            p("b", EdmValue::Boolean(true)),
            p("t", EdmValue::DateTime(EdmDateTime(-3))),
            p("g", EdmValue::Guid([7; 16])),
            p("x", EdmValue::Binary(vec![0, 1, 255])),
        ]
    }

    #[test]
    fn entity_round_trip() {
        let props = sample();
        let bytes = encode_entity(EdmDateTime(12345), &props);
        assert_eq!(decode_entity(&bytes), Some((EdmDateTime(12345), props)));
        assert_eq!(decode_entity_timestamp(&bytes), Some(EdmDateTime(12345)));
    }

    #[test]
    fn an_entity_changed_since_creation_keeps_both_instants() {
        let props = sample();
        let stamps = EntityStamps {
            timestamp: EdmDateTime(500),
            created: EdmDateTime(-7),
        };
        let bytes = encode_entity_stamped(stamps, &props);
        assert_eq!(bytes[0], ENTITY_V2);
        assert_eq!(
            decode_entity(&bytes),
            Some((EdmDateTime(500), props.clone()))
        );
        assert_eq!(decode_entity_stamps(&bytes), Some(stamps));
        assert_eq!(
            decode_entity_stamps(&bytes[..ENTITY_STAMPS_LEN]),
            Some(stamps)
        );
        assert_eq!(decode_entity_stamps(&bytes[..ENTITY_STAMPS_LEN - 1]), None);
        assert_eq!(RawEntity::new(&bytes).created(), Some(EdmDateTime(-7)));
        assert_eq!(
            RawEntity::new(&bytes).property("i"),
            Some(RawValue::Int32(-5))
        );
    }

    #[test]
    fn an_entity_never_changed_is_stored_as_before() {
        // The version-1 layout, written out: what earlier releases stored and still read.
        let bytes = encode_entity_stamped(EntityStamps::new_at(EdmDateTime(9)), &[]);
        assert_eq!(
            bytes,
            [&[ENTITY_V1][..], &9i64.to_le_bytes(), &[0]].concat()
        );
        let read = decode_entity_stamps(&bytes).unwrap();
        assert_eq!(
            (read.timestamp, read.created),
            (EdmDateTime(9), EdmDateTime(9))
        );
    }

    #[test]
    fn table_round_trip() {
        let rec = TableRecord {
            id: 9,
            name: "MyTable".into(),
            acl: vec![1, 2],
        };
        assert_eq!(decode_table(&encode_table(&rec)), Some(rec));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode_entity(&bytes);
            let _ = decode_entity_stamps(&bytes);
            let _ = decode_table(&bytes);
        }

        #[test]
        fn stamps_round_trip(timestamp in any::<i64>(), created in any::<i64>()) {
            let stamps = EntityStamps {
                timestamp: EdmDateTime(timestamp),
                created: EdmDateTime(created),
            };
            let bytes = encode_entity_stamped(stamps, &sample());
            prop_assert_eq!(decode_entity_stamps(&bytes), Some(stamps));
            prop_assert_eq!(decode_entity(&bytes), Some((EdmDateTime(timestamp), sample())));
        }

        #[test]
        fn truncation_is_detected(cut in 0usize..60, created in any::<i64>()) {
            let stamps = EntityStamps {
                timestamp: EdmDateTime(1),
                created: EdmDateTime(created),
            };
            let bytes = encode_entity_stamped(stamps, &sample());
            if cut < bytes.len() {
                prop_assert!(decode_entity(&bytes[..cut]).is_none());
            }
        }
    }
}

/// A property value read in place from an encoded entity, without allocating.
pub(crate) type RawValue<'a> = EdmValueRef<'a>;

/// An encoded entity value viewed in place: filters read the properties they name from the
/// bytes, and only matching entities are decoded in full.
#[derive(Debug, Clone, Copy)]
pub struct RawEntity<'a> {
    bytes: &'a [u8],
}

impl<'a> RawEntity<'a> {
    pub fn new(bytes: &'a [u8]) -> RawEntity<'a> {
        RawEntity { bytes }
    }

    pub(crate) fn timestamp(&self) -> Option<EdmDateTime> {
        decode_entity_timestamp(self.bytes)
    }

    /// When the entity was created (its Timestamp, for an entity never changed since).
    pub(crate) fn created(&self) -> Option<EdmDateTime> {
        decode_entity_stamps(self.bytes).map(|s| s.created)
    }

    /// The value of property `name`, if the entity has it (and the bytes are well formed).
    pub fn property(&self, name: &str) -> Option<RawValue<'a>> {
        let mut r = Reader { buf: self.bytes };
        let (_, count) = r.entity_header()?;
        for _ in 0..count {
            let is_it = r.bytes()? == name.as_bytes();
            let value = r.value()?;
            if is_it {
                return Some(value);
            }
        }
        None
    }

    /// The Timestamp and every property in stored order, borrowed from the bytes; `None` if
    /// the bytes are not a well-formed entity.
    pub(crate) fn properties(&self) -> Option<(EdmDateTime, Vec<(&'a str, RawValue<'a>)>)> {
        let mut r = Reader { buf: self.bytes };
        let (timestamp, count) = r.entity_header()?;
        let mut properties = Vec::with_capacity(count.min(256));
        for _ in 0..count {
            let name = r.str()?;
            properties.push((name, r.value()?));
        }
        r.buf.is_empty().then_some((timestamp, properties))
    }
}

#[cfg(test)]
mod raw_tests {
    use super::*;

    #[test]
    fn raw_view_reads_each_type_in_place() {
        let p = |name: &str, value| Property {
            name: name.to_string(),
            value,
        };
        let bytes = encode_entity(
            EdmDateTime(42),
            &[
                p("s", EdmValue::String("héllo".into())),
                p("i", EdmValue::Int32(-5)),
                p("x", EdmValue::Binary(vec![1, 2])),
                p("g", EdmValue::Guid([3; 16])),
            ],
        );
        let raw = RawEntity::new(&bytes);
        assert_eq!(raw.timestamp(), Some(EdmDateTime(42)));
        assert_eq!(raw.property("s"), Some(RawValue::String("héllo")));
        assert_eq!(raw.property("i"), Some(RawValue::Int32(-5)));
        assert_eq!(raw.property("x"), Some(RawValue::Binary(&[1, 2])));
        assert_eq!(raw.property("g"), Some(RawValue::Guid([3; 16])));
        assert_eq!(raw.property("missing"), None);
        assert_eq!(RawEntity::new(&bytes[..5]).property("s"), None);
    }
}
