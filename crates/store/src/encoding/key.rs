//! Order-preserving byte encoding of store keys.
//!
//! Entity keys are `table id (u64 BE) ‖ enc(PartitionKey) ‖ enc(RowKey)`, so that byte order
//! equals Azure's order: by PartitionKey, then RowKey, each compared ordinally by UTF-16 code
//! units. `enc` takes the UTF-8 bytes, moves the lead bytes of U+E000..U+FFFF (0xEE, 0xEF) above
//! those of supplementary characters (0xF8, 0xF9: never valid UTF-8, so reversible) because
//! UTF-16 sorts surrogate pairs below U+E000, escapes 0x00 as `00 FF`, and terminates the
//! component with `00 01`. Hence `"a" < "a\0" < "ab"` and every component is self-delimiting.
//! Table metadata keys are `enc(account) ‖ identity`: the lower-cased table name, or the
//! case-sensitive identity of a Cosmos name (`model::names::table_identity`).

use std::ops::Bound;

const TERMINATOR: [u8; 2] = [0x00, 0x01];
/// Sorts after every row of a partition: `00 02` is above `00 01 …` and below `00 FF` (an
/// escaped NUL continuing the partition key) and below any non-zero byte.
const PARTITION_END: [u8; 2] = [0x00, 0x02];

pub(crate) fn encode_component(text: &str, out: &mut Vec<u8>) {
    out.reserve(text.len() + 2);
    for &b in text.as_bytes() {
        match b {
            0x00 => out.extend_from_slice(&[0x00, 0xFF]),
            0xEE => out.push(0xF8),
            0xEF => out.push(0xF9),
            _ => out.push(b),
        }
    }
    out.extend_from_slice(&TERMINATOR);
}

/// Decodes one component from the front of `bytes`; returns it and the rest.
pub(crate) fn decode_component(bytes: &[u8]) -> Option<(String, &[u8])> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0x00 => match bytes.get(i + 1)? {
                0x01 => return String::from_utf8(out).ok().map(|s| (s, &bytes[i + 2..])),
                0xFF => {
                    out.push(0);
                    i += 2;
                }
                _ => return None,
            },
            0xF8 => {
                out.push(0xEE);
                i += 1;
            }
            0xF9 => {
                out.push(0xEF);
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    None
}

pub(crate) fn table_prefix(table_id: u64) -> [u8; 8] {
    table_id.to_be_bytes()
}

pub fn entity_key(table_id: u64, partition_key: &str, row_key: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(12 + partition_key.len() + row_key.len());
    key.extend_from_slice(&table_prefix(table_id));
    encode_component(partition_key, &mut key);
    encode_component(row_key, &mut key);
    key
}

/// Splits an entity key into (PartitionKey, RowKey).
pub fn decode_entity_key(key: &[u8]) -> Option<(String, String)> {
    let rest = key.get(8..)?;
    let (pk, rest) = decode_component(rest)?;
    let (rk, rest) = decode_component(rest)?;
    rest.is_empty().then_some((pk, rk))
}

/// A position in a table's (PartitionKey, RowKey) order, used as a range bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyBound {
    /// The beginning (as a start) or the end (as an end) of the table.
    Unbounded,
    /// Just before the first row of the partition.
    PartitionStart(String),
    /// Just after the last row of the partition.
    PartitionEnd(String),
    /// Exactly this entity, included.
    Included(String, String),
    /// Exactly this entity, excluded.
    Excluded(String, String),
}

/// A half-open or closed range of entity keys of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub start: KeyBound,
    pub end: KeyBound,
}

impl KeyRange {
    pub fn all() -> KeyRange {
        KeyRange {
            start: KeyBound::Unbounded,
            end: KeyBound::Unbounded,
        }
    }

    pub fn partition(partition_key: &str) -> KeyRange {
        KeyRange {
            start: KeyBound::PartitionStart(partition_key.to_string()),
            end: KeyBound::PartitionEnd(partition_key.to_string()),
        }
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn point(partition_key: &str, row_key: &str) -> KeyRange {
        KeyRange {
            start: KeyBound::Included(partition_key.to_string(), row_key.to_string()),
            end: KeyBound::Included(partition_key.to_string(), row_key.to_string()),
        }
    }

    /// The byte bounds of this range inside table `table_id`.
    pub fn to_bytes(&self, table_id: u64) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
        let prefix = table_prefix(table_id);
        let partition = |pk: &str, suffix: [u8; 2]| {
            let mut k = prefix.to_vec();
            encode_component(pk, &mut k);
            // encode_component ended with 00 01; PartitionEnd replaces that with 00 02.
            if suffix == PARTITION_END {
                let n = k.len();
                k[n - 1] = 0x02;
            }
            k
        };
        let start = match &self.start {
            KeyBound::Unbounded => Bound::Included(prefix.to_vec()),
            KeyBound::PartitionStart(pk) => Bound::Included(partition(pk, TERMINATOR)),
            KeyBound::PartitionEnd(pk) => Bound::Included(partition(pk, PARTITION_END)),
            KeyBound::Included(pk, rk) => Bound::Included(entity_key(table_id, pk, rk)),
            KeyBound::Excluded(pk, rk) => Bound::Excluded(entity_key(table_id, pk, rk)),
        };
        let end = match &self.end {
            KeyBound::Unbounded => match table_id.checked_add(1) {
                Some(next) => Bound::Excluded(table_prefix(next).to_vec()),
                None => Bound::Unbounded,
            },
            KeyBound::PartitionStart(pk) => Bound::Excluded(partition(pk, TERMINATOR)),
            KeyBound::PartitionEnd(pk) => Bound::Excluded(partition(pk, PARTITION_END)),
            KeyBound::Included(pk, rk) => Bound::Included(entity_key(table_id, pk, rk)),
            KeyBound::Excluded(pk, rk) => Bound::Excluded(entity_key(table_id, pk, rk)),
        };
        (start, end)
    }
}

/// Key of a table's metadata record: `enc(account) ‖ identity`.
pub fn table_meta_key(account: &str, identity: &str) -> Vec<u8> {
    let mut key = account_prefix(account);
    key.extend_from_slice(identity.as_bytes());
    key
}

/// The identity a table's metadata key holds (after its account).
pub fn table_identity_of(meta_key: &[u8]) -> Option<String> {
    let (_, rest) = decode_component(meta_key)?;
    String::from_utf8(rest.to_vec()).ok()
}

pub fn account_prefix(account: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(account.len() + 2);
    encode_component(account, &mut key);
    key
}

/// Metadata keys outside every account's key range (account encodings never start with 0xFF):
/// the next table id, the marker of a deleted table whose entities are still being purged, and
/// an account's service properties.
pub(crate) const NEXT_TABLE_ID_KEY: &[u8] = b"\xFF\xFFnext-table-id";
const DELETED_TABLE_PREFIX: &[u8] = b"\xFF\xFEdeleted-table/";
pub(crate) const SERVICE_PROPERTIES_PREFIX: &[u8] = b"\xFF\xFDservice-properties/";

/// The key of `account`'s service properties.
pub(crate) fn service_properties_key(account: &str) -> Vec<u8> {
    let mut key = SERVICE_PROPERTIES_PREFIX.to_vec();
    key.extend_from_slice(account.as_bytes());
    key
}

/// The marker of deleted table `table_id`, kept until its entities are purged.
pub(crate) fn deleted_table_key(table_id: u64) -> Vec<u8> {
    let mut key = DELETED_TABLE_PREFIX.to_vec();
    key.extend_from_slice(&table_id.to_be_bytes());
    key
}

/// The table a deleted-table marker names; `None` for any other key.
pub(crate) fn deleted_table_of(key: &[u8]) -> Option<u64> {
    key.strip_prefix(DELETED_TABLE_PREFIX)
        .and_then(|id| id.try_into().ok())
        .map(u64::from_be_bytes)
}

/// Where the deleted-table markers start: a range from here to the end of the metadata
/// keyspace holds them all (and keys [`deleted_table_of`] passes over).
pub(crate) fn deleted_tables_start() -> Bound<Vec<u8>> {
    Bound::Included(DELETED_TABLE_PREFIX.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::edm::compare_ordinal;
    use proptest::prelude::*;

    #[test]
    fn nul_and_prefix_order() {
        let a = entity_key(1, "a", "");
        let a0 = entity_key(1, "a\0", "");
        let ab = entity_key(1, "ab", "");
        assert!(a < a0 && a0 < ab);
    }

    #[test]
    fn partition_bounds_enclose_exactly_the_partition() {
        let range = KeyRange::partition("p");
        let (start, end) = range.to_bytes(7);
        let inside = |k: &Vec<u8>| {
            let after_start = match &start {
                Bound::Included(s) => k >= s,
                Bound::Excluded(s) => k > s,
                Bound::Unbounded => true,
            };
            let before_end = match &end {
                Bound::Included(e) => k <= e,
                Bound::Excluded(e) => k < e,
                Bound::Unbounded => true,
            };
            after_start && before_end
        };
        assert!(inside(&entity_key(7, "p", "")));
        assert!(inside(&entity_key(7, "p", "\u{10FFFF}zz")));
        assert!(!inside(&entity_key(7, "p\0", "")));
        assert!(!inside(&entity_key(7, "pa", "")));
        assert!(!inside(&entity_key(7, "", "p")));
        assert!(!inside(&entity_key(8, "p", "")));
    }

    proptest! {
        #[test]
        fn encoding_preserves_ordinal_order(a in ".*", b in ".*", c in ".*", d in ".*") {
            let ka = entity_key(3, &a, &b);
            let kb = entity_key(3, &c, &d);
            let expected = compare_ordinal(&a, &c).then_with(|| compare_ordinal(&b, &d));
            prop_assert_eq!(ka.cmp(&kb), expected);
        }

        #[test]
        fn encoding_round_trips(a in ".*", b in ".*") {
            let k = entity_key(42, &a, &b);
            prop_assert_eq!(decode_entity_key(&k), Some((a, b)));
        }
    }
}

impl KeyRange {
    /// This range limited to keys at or after `(pk, rk)`; `None` when nothing is left.
    pub fn resume_from(&self, partition_key: &str, row_key: &str) -> Option<KeyRange> {
        let resume = entity_key(0, partition_key, row_key);
        let (start, end) = self.to_bytes(0);
        let start_before_resume = match &start {
            Bound::Included(s) => *s <= resume,
            Bound::Excluded(s) => *s < resume,
            Bound::Unbounded => true,
        };
        let resume_in_end = match &end {
            Bound::Included(e) => resume <= *e,
            Bound::Excluded(e) => resume < *e,
            Bound::Unbounded => true,
        };
        if !resume_in_end {
            return None;
        }
        Some(if start_before_resume {
            KeyRange {
                start: KeyBound::Included(partition_key.to_string(), row_key.to_string()),
                end: self.end.clone(),
            }
        } else {
            self.clone()
        })
    }
}

#[cfg(test)]
mod resume_tests {
    use super::*;

    #[test]
    fn resume_inside_before_and_after() {
        let r = KeyRange::partition("p");
        assert_eq!(
            r.resume_from("p", "5").unwrap().start,
            KeyBound::Included("p".into(), "5".into())
        );
        assert_eq!(r.resume_from("a", "5").unwrap(), r);
        assert_eq!(r.resume_from("q", ""), None);
        assert_eq!(KeyRange::point("p", "1").resume_from("p", "2"), None);
        assert!(KeyRange::point("p", "1").resume_from("p", "1").is_some());
    }
}

impl KeyRange {
    /// The keys in both ranges; `None` when they do not overlap.
    pub fn intersect(&self, other: &KeyRange) -> Option<KeyRange> {
        let (s1, e1) = self.to_bytes(0);
        let (s2, e2) = other.to_bytes(0);
        // The later start and the earlier end win; on equal bytes an excluded bound is tighter.
        let start_rank = |b: &Bound<Vec<u8>>| match b {
            Bound::Included(k) => (Some(k.clone()), 0),
            Bound::Excluded(k) => (Some(k.clone()), 1),
            Bound::Unbounded => (None, 0),
        };
        let end_rank = |b: &Bound<Vec<u8>>| match b {
            Bound::Included(k) => (Some(k.clone()), 1),
            Bound::Excluded(k) => (Some(k.clone()), 0),
            Bound::Unbounded => (None, 2),
        };
        let start = if start_rank(&s1) >= start_rank(&s2) {
            self.start.clone()
        } else {
            other.start.clone()
        };
        let end = match (end_rank(&e1), end_rank(&e2)) {
            ((None, _), _) => other.end.clone(),
            (_, (None, _)) => self.end.clone(),
            (a, b) if a <= b => self.end.clone(),
            _ => other.end.clone(),
        };
        let range = KeyRange { start, end };
        let (s, e) = range.to_bytes(0);
        let non_empty = match (&s, &e) {
            (Bound::Included(a), Bound::Included(b)) => a <= b,
            (Bound::Included(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b))
            | (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
            _ => true,
        };
        non_empty.then_some(range)
    }
}

#[cfg(test)]
mod intersect_tests {
    use super::*;

    fn inside(r: &KeyRange, pk: &str, rk: &str) -> bool {
        r.resume_from(pk, rk).is_some_and(|x| {
            let (s, _) = x.to_bytes(0);
            let k = entity_key(0, pk, rk);
            match s {
                Bound::Included(s) => s <= k,
                Bound::Excluded(s) => s < k,
                Bound::Unbounded => true,
            }
        })
    }

    #[test]
    fn intersections() {
        let sas = KeyRange {
            start: KeyBound::PartitionStart("b".into()),
            end: KeyBound::Included("d".into(), "5".into()),
        };
        let all = KeyRange::all().intersect(&sas).unwrap();
        assert_eq!(all, sas);
        assert_eq!(KeyRange::partition("a").intersect(&sas), None);
        assert_eq!(
            KeyRange::partition("c").intersect(&sas),
            Some(KeyRange::partition("c"))
        );
        let d = KeyRange::partition("d").intersect(&sas).unwrap();
        assert!(inside(&d, "d", "5") && !inside(&d, "d", "6") && inside(&d, "d", ""));
        assert_eq!(KeyRange::point("d", "6").intersect(&sas), None);
    }
}
