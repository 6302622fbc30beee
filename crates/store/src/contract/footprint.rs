//! How much data the store holds, next to what it takes on disk: the number of entities and
//! the bytes of their stored keys and values (the "logical" size), kept by the backend as its
//! writes apply, so `/metrics` and the insight endpoint read them without a scan.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::StoreError;

/// The store's size as `/metrics` and the insight endpoint report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Footprint {
    /// Entities stored (in every table, deleted tables not yet purged included).
    pub entities: u64,
    /// Bytes of those entities' stored keys and encoded values.
    pub logical_bytes: u64,
    /// Bytes of the data folder's files (PostgreSQL: the entities table's, with its index);
    /// `None` for a store that keeps nothing on disk.
    pub disk_bytes: Option<u64>,
}

/// Running totals of the entity keyspace: updated by every applied write with the sizes of
/// the entry it replaced or removed.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    entities: AtomicI64,
    bytes: AtomicI64,
}

/// Size of the persisted form ([`Totals::encode`]).
const ENCODED_LEN: usize = 16;

impl Totals {
    /// Counts the entries of a keyspace (a full scan: at start-up only); `value_len` says how
    /// long the value a stored entry holds is (a compressed entry counts uncompressed).
    pub(crate) fn count<K: AsRef<[u8]>, V: AsRef<[u8]>>(
        entries: impl Iterator<Item = Result<(K, V), StoreError>>,
        value_len: impl Fn(&[u8]) -> usize,
    ) -> Result<Totals, StoreError> {
        let totals = Totals::default();
        for entry in entries {
            let (k, v) = entry?;
            totals.change(k.as_ref().len(), None, Some(value_len(v.as_ref())));
        }
        Ok(totals)
    }

    /// Records that the value under a key of `key_len` bytes went from `old` to `new` bytes
    /// (`None`: absent).
    pub(crate) fn change(&self, key_len: usize, old: Option<usize>, new: Option<usize>) {
        let size = |v: Option<usize>| v.map_or(0, |n| (key_len + n) as i64);
        let entities = i64::from(new.is_some()) - i64::from(old.is_some());
        if entities != 0 {
            self.entities.fetch_add(entities, Ordering::Relaxed);
        }
        self.bytes
            .fetch_add(size(new) - size(old), Ordering::Relaxed);
    }

    /// Replaces the totals (after a recount).
    pub(crate) fn set(&self, other: &Totals) {
        let (entities, bytes) = other.get();
        self.entities.store(entities as i64, Ordering::Relaxed);
        self.bytes.store(bytes as i64, Ordering::Relaxed);
    }

    /// (entities, logical bytes).
    pub(crate) fn get(&self) -> (u64, u64) {
        let clamp = |v: &AtomicI64| v.load(Ordering::Relaxed).max(0) as u64;
        (clamp(&self.entities), clamp(&self.bytes))
    }

    /// The totals as stored at a clean shutdown: entities, then bytes, little-endian.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let (entities, bytes) = self.get();
        let mut out = Vec::with_capacity(ENCODED_LEN);
        out.extend_from_slice(&entities.to_le_bytes());
        out.extend_from_slice(&bytes.to_le_bytes());
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Totals> {
        if bytes.len() != ENCODED_LEN {
            return None;
        }
        let word = |i: usize| -> Option<i64> {
            let v = u64::from_le_bytes(bytes[i..i + 8].try_into().ok()?);
            i64::try_from(v).ok()
        };
        Some(Totals {
            entities: AtomicI64::new(word(0)?),
            bytes: AtomicI64::new(word(8)?),
        })
    }
}

/// Total size in bytes of the regular files under `dir`, subfolders included (symlinks are
/// not followed); 0 for a folder that cannot be read.
pub(crate) fn folder_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_add_up() {
        let t = Totals::default();
        t.change(10, None, Some(100)); // insert
        t.change(12, None, Some(50)); // insert
        assert_eq!(t.get(), (2, 172));
        t.change(10, Some(100), Some(30)); // overwrite, smaller
        assert_eq!(t.get(), (2, 102));
        t.change(12, Some(50), None); // delete
        assert_eq!(t.get(), (1, 40));
        t.change(99, None, None); // delete of a missing key
        assert_eq!(t.get(), (1, 40));
    }

    type Rows = Vec<Result<(Vec<u8>, Vec<u8>), StoreError>>;

    #[test]
    fn counts_a_keyspace_and_round_trips() {
        let rows: Rows = vec![Ok((vec![1; 3], vec![2; 7])), Ok((vec![3; 5], vec![]))];
        let t = Totals::count(rows.into_iter(), <[u8]>::len).unwrap();
        assert_eq!(t.get(), (2, 15));
        let back = Totals::decode(&t.encode()).unwrap();
        assert_eq!(back.get(), (2, 15));
        assert!(Totals::decode(&[0; 15]).is_none());
        let failing: Rows = vec![Err(StoreError::Corrupt("x".into()))];
        assert!(Totals::count(failing.into_iter(), <[u8]>::len).is_err());
    }

    #[test]
    fn folder_bytes_sums_files_in_subfolders() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("a"), [0u8; 10]).unwrap();
        std::fs::write(d.path().join("sub/b"), [0u8; 5]).unwrap();
        assert_eq!(folder_bytes(d.path()), 15);
        assert_eq!(folder_bytes(&d.path().join("missing")), 0);
    }
}
