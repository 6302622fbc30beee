//! Versioned binary encoding of stored values: entities (Timestamp + typed properties) and
//! table metadata. Keys live in `key.rs`; PartitionKey and RowKey are not repeated here.
//! Decoding never panics: bad bytes give `None`, which the store reports as corruption.

use crate::model::{EdmDateTime, EdmValue, EdmValueRef, Property};

const ENTITY_V1: u8 = 1;
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
    /// The entity header: format version, Timestamp, property count.
    fn entity_header(&mut self) -> Option<(EdmDateTime, usize)> {
        if self.u8()? != ENTITY_V1 {
            return None;
        }
        let timestamp = EdmDateTime(i64::from_le_bytes(self.array()?));
        let count = usize::try_from(self.varint()?).ok()?;
        Some((timestamp, count))
    }
}

pub fn encode_entity(timestamp: EdmDateTime, properties: &[Property]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + properties.len() * 24);
    out.push(ENTITY_V1);
    out.extend_from_slice(&timestamp.0.to_le_bytes());
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
    let mut r = Reader { buf: bytes };
    if r.u8()? != ENTITY_V1 {
        return None;
    }
    Some(EdmDateTime(i64::from_le_bytes(r.array()?)))
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
            let _ = decode_table(&bytes);
        }

        #[test]
        fn truncation_is_detected(cut in 0usize..60) {
            let bytes = encode_entity(EdmDateTime(1), &sample());
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
