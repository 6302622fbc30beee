//! In-memory backend (`--in-memory`, tests): two BTreeMaps behind RwLocks. Range reads copy a
//! bounded chunk at a time, so a scan never holds the lock across calls.

use parking_lot::RwLock;
use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use super::footprint::{Footprint, Totals};
use super::{Kv, Space, StoreError};

type Map = BTreeMap<Vec<u8>, Arc<[u8]>>;
type Entry = (Arc<[u8]>, Arc<[u8]>);

#[derive(Default)]
pub struct MemoryKv {
    tables: RwLock<Map>,
    entities: RwLock<Map>,
    /// The entity map's count and bytes.
    totals: Totals,
}

impl MemoryKv {
    pub fn new() -> MemoryKv {
        MemoryKv::default()
    }

    fn map(&self, space: Space) -> &RwLock<Map> {
        match space {
            Space::Tables => &self.tables,
            Space::Entities => &self.entities,
        }
    }
}

const CHUNK: usize = 256;

pub struct MemoryIter<'a> {
    kv: &'a MemoryKv,
    space: Space,
    next_start: Option<Bound<Vec<u8>>>,
    end: Bound<Vec<u8>>,
    buffer: std::vec::IntoIter<Entry>,
}

impl Iterator for MemoryIter<'_> {
    type Item = Result<(Arc<[u8]>, Arc<[u8]>), StoreError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(item) = self.buffer.next() {
            return Some(Ok(item));
        }
        let start = self.next_start.take()?;
        let map = self.kv.map(self.space).read();
        if !range_is_valid(&start, &self.end) {
            return None;
        }
        let chunk: Vec<Entry> = map
            .range((start, self.end.clone()))
            .take(CHUNK)
            .map(|(k, v)| (Arc::from(k.as_slice()), Arc::clone(v)))
            .collect();
        drop(map);
        if chunk.len() == CHUNK {
            let last = chunk[CHUNK - 1].0.to_vec();
            self.next_start = Some(Bound::Excluded(last));
        }
        self.buffer = chunk.into_iter();
        self.buffer.next().map(Ok)
    }
}

/// BTreeMap::range panics on inverted or empty-excluded ranges; such ranges are simply empty.
pub(super) fn range_is_valid(start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    match (start, end) {
        (Bound::Included(s), Bound::Included(e)) => s <= e,
        (Bound::Included(s), Bound::Excluded(e)) | (Bound::Excluded(s), Bound::Included(e)) => {
            s < e
        }
        (Bound::Excluded(s), Bound::Excluded(e)) => s < e,
        _ => true,
    }
}

/// A range's bounds as slices, for `BTreeMap::range` over byte-string keys.
pub(super) fn as_slice(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// [`Kv::split_point`] over an ordered map held in RAM: the first key at or after the
/// byte-wise midpoint of the range's first and last keys, if the range holds at least
/// `min_rows` keys (counted without reading a value) and that key is not the first.
pub(super) fn middle_key<K: Borrow<[u8]> + Ord, V>(
    rows: &BTreeMap<K, V>,
    start: &Bound<Vec<u8>>,
    end: &Bound<Vec<u8>>,
    min_rows: usize,
) -> Option<Vec<u8>> {
    if !range_is_valid(start, end) {
        return None;
    }
    let bounds = (as_slice(start), as_slice(end));
    let min_rows = min_rows.max(2);
    if rows.range::<[u8], _>(bounds).take(min_rows).count() < min_rows {
        return None;
    }
    let mut in_range = rows.range::<[u8], _>(bounds);
    let first: &[u8] = in_range.next()?.0.borrow();
    let last: &[u8] = in_range.next_back()?.0.borrow();
    let middle = midpoint(first, last);
    let (key, _) = rows
        .range::<[u8], _>((Bound::Included(middle.as_slice()), as_slice(end)))
        .next()?;
    let key: &[u8] = key.borrow();
    (key > first).then(|| key.to_vec())
}

/// A byte string between `a` and `b` (`a <= b`): their common prefix, then the mean of the
/// next eight bytes of each read as big-endian numbers.
fn midpoint(a: &[u8], b: &[u8]) -> Vec<u8> {
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let word = |k: &[u8]| {
        let mut w = [0u8; 8];
        for (slot, byte) in w.iter_mut().zip(k.iter().skip(common)) {
            *slot = *byte;
        }
        u128::from(u64::from_be_bytes(w))
    };
    let mean = ((word(a) + word(b)) / 2) as u64;
    let mut key = a[..common].to_vec();
    key.extend_from_slice(&mean.to_be_bytes());
    key
}

impl Kv for MemoryKv {
    type Bytes = Arc<[u8]>;
    type Iter<'a> = MemoryIter<'a>;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Arc<[u8]>>, StoreError> {
        let map = self.map(space).read();
        Ok(map.get(key).cloned())
    }

    fn range(&self, space: Space, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> MemoryIter<'_> {
        MemoryIter {
            kv: self,
            space,
            next_start: Some(start),
            end,
            buffer: Vec::new().into_iter(),
        }
    }

    fn split_point(
        &self,
        space: Space,
        start: &Bound<Vec<u8>>,
        end: &Bound<Vec<u8>>,
        min_rows: usize,
    ) -> Option<Vec<u8>> {
        let map = self.map(space).read();
        middle_key(&map, start, end, min_rows)
    }

    fn apply(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        let mut map = self.map(space).write();
        for (k, v) in batch {
            let key_len = k.len();
            let new = v.as_ref().map(Vec::len);
            let old = match v {
                Some(v) => map.insert(k, Arc::from(v)),
                None => map.remove(&k),
            };
            if space == Space::Entities {
                self.totals.change(key_len, old.map(|o| o.len()), new);
            }
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn is_persistent(&self) -> bool {
        false
    }

    fn share(bytes: Arc<[u8]>) -> Arc<[u8]> {
        bytes
    }

    fn put_new_shared(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Arc<[u8]>)>,
    ) -> Result<(), StoreError> {
        let mut map = self.map(space).write();
        for (k, v) in batch {
            let (key_len, new) = (k.len(), v.len());
            let old = map.insert(k, v);
            if space == Space::Entities {
                self.totals.change(key_len, old.map(|o| o.len()), Some(new));
            }
        }
        Ok(())
    }

    fn footprint(&self) -> Option<Footprint> {
        let (entities, logical_bytes) = self.totals.get();
        Some(Footprint {
            entities,
            logical_bytes,
            disk_bytes: None,
        })
    }
}

#[cfg(test)]
crate::store_conformance!(
    durable: false,
    open: |_dir: &std::path::Path| -> std::sync::Arc<dyn crate::store::Store> {
        crate::store::KvStore::open(
            crate::store::memory::MemoryKv::new(),
            crate::store::Durability::Durable,
        )
        .expect("open")
    },
);
