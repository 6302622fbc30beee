//! [`StoreState`] for [`KvStore`], over any backend: images read with range scans, staged
//! tables written as new keys, and the switch as one multi-key write of the table-metadata
//! keyspace, which every backend applies atomically (sled across a crash too, through its
//! intent records).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use async_trait::async_trait;

use super::{Image, ImageTable, Installed, Staged, StagedTable, StateScope, StoreState};
use crate::store::codec::{self, TableRecord};
use crate::store::key::{self, KeyRange};
use crate::store::{
    service_properties_key, Kv, KvStore, Space, StoreError, DELETED_TABLE_PREFIX,
    NEXT_TABLE_ID_KEY, SERVICE_PROPERTIES_PREFIX,
};

/// Entities written per backend write while staging.
const STAGE_CHUNK: usize = 1000;

type Range = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// A table record of a scope: its metadata key, account, identity and record.
type ScopeTable = (Vec<u8>, String, String, TableRecord);

/// The table-metadata keys of a scope's tables. Account encodings never start with 0xFF
/// (UTF-8 has no such byte), so every account's tables lie below the store's own keys.
fn table_range(scope: &StateScope) -> Range {
    match scope {
        StateScope::Server => (Bound::Unbounded, Bound::Excluded(vec![0xFF])),
        StateScope::Account(account) => {
            let start = key::account_prefix(account);
            // The prefix ends with the terminator 00 01; 00 02 bounds it.
            let mut end = start.clone();
            let n = end.len();
            end[n - 1] = 0x02;
            (Bound::Included(start), Bound::Excluded(end))
        }
    }
}

/// The service-properties keys of a scope.
fn properties_range(scope: &StateScope) -> Range {
    match scope {
        StateScope::Server => {
            let mut end = SERVICE_PROPERTIES_PREFIX.to_vec();
            let n = end.len();
            end[n - 1] += 1;
            (
                Bound::Included(SERVICE_PROPERTIES_PREFIX.to_vec()),
                Bound::Excluded(end),
            )
        }
        StateScope::Account(account) => {
            let key = service_properties_key(account);
            (Bound::Included(key.clone()), Bound::Included(key))
        }
    }
}

fn purge_marker(table_id: u64) -> Vec<u8> {
    let mut marker = DELETED_TABLE_PREFIX.to_vec();
    marker.extend_from_slice(&table_id.to_be_bytes());
    marker
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("{what} (while reading the store's state)"))
}

impl<B: Kv> KvStore<B> {
    /// The scope's table records: (metadata key, account, identity, record).
    fn scope_tables(&self, scope: &StateScope) -> Result<Vec<ScopeTable>, StoreError> {
        let (start, end) = table_range(scope);
        let mut out = Vec::new();
        for entry in self.kv.range(Space::Tables, start, end) {
            let (k, v) = entry?;
            let k = k.as_ref();
            let (account, _) = key::decode_component(k).ok_or_else(|| corrupt("a table key"))?;
            let identity = key::table_identity_of(k).ok_or_else(|| corrupt("a table key"))?;
            let record =
                codec::decode_table(v.as_ref()).ok_or_else(|| corrupt("a table record"))?;
            out.push((k.to_vec(), account, identity, record));
        }
        Ok(out)
    }

    fn capture_now(&self, scope: &StateScope) -> Result<Image, StoreError> {
        let mut image = Image::empty(scope.clone());
        for (_, account, identity, record) in self.scope_tables(scope)? {
            let (start, end) = KeyRange::all().to_bytes(record.id);
            let mut rows = Vec::new();
            for row in self.kv.range(Space::Entities, start, end) {
                let (k, v) = row?;
                let suffix = k
                    .as_ref()
                    .get(8..)
                    .ok_or_else(|| corrupt("an entity key"))?;
                rows.push((suffix.into(), B::share(v)));
            }
            image.tables.push(ImageTable {
                account,
                identity,
                name: record.name,
                acl: record.acl,
                rows,
            });
        }
        let (start, end) = properties_range(scope);
        for entry in self.kv.range(Space::Tables, start, end) {
            let (k, v) = entry?;
            let account = k
                .as_ref()
                .strip_prefix(SERVICE_PROPERTIES_PREFIX)
                .and_then(|a| std::str::from_utf8(a).ok())
                .ok_or_else(|| corrupt("a service-properties key"))?;
            image
                .service_properties
                .push((account.to_string(), v.as_ref().to_vec()));
        }
        Ok(image)
    }

    fn stage_now(&self, image: &Image) -> Result<Staged, StoreError> {
        let n = image.tables.len() as u64;
        let first = {
            let _guard = self.table_lock.lock();
            let first = self.next_table_id.fetch_add(n, Ordering::SeqCst);
            // The ids are taken, and marked for purging until the switch, in one write: a
            // crash before the switch leaves their rows to the purge at the next start.
            let mut batch = vec![(
                NEXT_TABLE_ID_KEY.to_vec(),
                Some((first + n).to_le_bytes().to_vec()),
            )];
            batch.extend((first..first + n).map(|id| (purge_marker(id), Some(Vec::new()))));
            self.write_tables(batch)?;
            first
        };
        let mut staged = Staged {
            scope: image.scope.clone(),
            tables: Vec::with_capacity(image.tables.len()),
            service_properties: image.service_properties.clone(),
            entities: image.entities(),
        };
        for (id, table) in (first..).zip(&image.tables) {
            staged.tables.push(StagedTable {
                id,
                account: table.account.clone(),
                identity: table.identity.clone(),
                name: table.name.clone(),
                acl: table.acl.clone(),
            });
            let prefix = key::table_prefix(id);
            for chunk in table.rows.chunks(STAGE_CHUNK) {
                let batch = chunk
                    .iter()
                    .map(|(suffix, value)| {
                        let mut k = Vec::with_capacity(8 + suffix.len());
                        k.extend_from_slice(&prefix);
                        k.extend_from_slice(suffix);
                        (k, Arc::clone(value))
                    })
                    .collect();
                self.kv.begin_write()?;
                // The ids are new: no key of theirs holds a value.
                self.kv.put_new_shared(Space::Entities, batch)?;
            }
        }
        Ok(staged)
    }

    /// The switch's one write; returns the ids of the tables it removed, what it installed
    /// and the backend generation it was applied in.
    fn switch_now(&self, staged: &Staged) -> Result<(Vec<u64>, Installed, u64), StoreError> {
        let _guard = self.table_lock.lock();
        let current = self.scope_tables(&staged.scope)?;
        // A key may be removed and put again (a table of the same name): the last word wins.
        let mut batch: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
        let mut removed = Vec::with_capacity(current.len());
        for (meta_key, _, _, record) in current {
            batch.insert(meta_key, None);
            batch.insert(purge_marker(record.id), Some(Vec::new()));
            removed.push(record.id);
        }
        let (start, end) = properties_range(&staged.scope);
        for entry in self.kv.range(Space::Tables, start, end) {
            let (k, _) = entry?;
            batch.insert(k.as_ref().to_vec(), None);
        }
        for t in &staged.tables {
            batch.insert(purge_marker(t.id), None);
            let record = TableRecord {
                id: t.id,
                name: t.name.clone(),
                acl: t.acl.clone(),
            };
            batch.insert(
                key::table_meta_key(&t.account, &t.identity),
                Some(codec::encode_table(&record)),
            );
        }
        for (account, properties) in &staged.service_properties {
            batch.insert(service_properties_key(account), Some(properties.clone()));
        }
        let generation = self.write_tables(batch.into_iter().collect())?;
        let installed = Installed {
            tables_removed: removed.len(),
            tables: staged.tables.len(),
            entities: staged.entities,
        };
        Ok((removed, installed, generation))
    }
}

#[async_trait]
impl<B: Kv> StoreState for KvStore<B> {
    async fn capture(&self, scope: &StateScope) -> Result<Image, StoreError> {
        self.capture_now(scope)
    }

    async fn stage(&self, image: &Image) -> Result<Staged, StoreError> {
        self.stage_now(image)
    }

    async fn switch(&self, staged: Staged) -> Result<Installed, StoreError> {
        let switched = self.switch_now(&staged);
        let (removed, installed, generation) = match switched {
            Ok(s) => s,
            Err(e) => {
                self.discard(staged).await;
                return Err(e);
            }
        };
        self.durable(generation).await?;
        for id in removed {
            self.spawn_purge(id);
        }
        Ok(installed)
    }

    async fn discard(&self, staged: Staged) {
        for t in staged.tables {
            self.spawn_purge(t.id);
        }
    }
}
