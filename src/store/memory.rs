//! In-memory backend (`--in-memory`, tests): two BTreeMaps behind RwLocks. Range reads copy a
//! bounded chunk at a time, so a scan never holds the lock across calls.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, RwLock};

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
        let map = self
            .kv
            .map(self.space)
            .read()
            .unwrap_or_else(|e| e.into_inner());
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

impl Kv for MemoryKv {
    type Bytes = Arc<[u8]>;
    type Iter<'a> = MemoryIter<'a>;

    fn get(&self, space: Space, key: &[u8]) -> Result<Option<Arc<[u8]>>, StoreError> {
        let map = self.map(space).read().unwrap_or_else(|e| e.into_inner());
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

    fn apply(
        &self,
        space: Space,
        batch: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) -> Result<(), StoreError> {
        let mut map = self.map(space).write().unwrap_or_else(|e| e.into_inner());
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
