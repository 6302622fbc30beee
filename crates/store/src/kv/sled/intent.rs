//! Crash-atomic multi-key writes on sled without sled's own batches.
//!
//! `sled::Tree::apply_batch` (and its transactions) take a process-wide lock in sled 0.34
//! (`concurrency_control::write()`, one `static` for every database and tree) and force its
//! log buffer out twice per batch (`pin_log` rolls it before and after the batch's manifest
//! reservation): every change set in the process waits for every other, whatever its table or
//! partition, and once one batch has run, every read and write takes the read side of that
//! lock. So a multi-key write is made atomic here instead, with single-key operations only:
//!
//! 1. the whole write (keyspace, then each key and its new stored value or removal) is
//!    inserted as one *intent* record in a tree of its own, under a fresh id;
//! 2. each key is inserted or removed in its keyspace;
//! 3. the intent is removed.
//!
//! sled recovers its log up to the first write that did not reach the file: what survives a
//! crash is a prefix of the writes in log order, and one thread's writes reach the log in the
//! order it made them. So after a crash either none of a write's keys survived and neither did
//! its intent (or only its intent did), or some did and the intent did too. Opening the store
//! therefore applies every intent it finds again (idempotent: each key gets its final value)
//! and then removes it. An intent removed means every key of its write was applied before.
//!
//! A write whose keys all held no value before (inserts of new entities: `$batch` inserts, bulk
//! loads) gets a smaller record instead: its keys only, which opening removes again (the write
//! is rolled back rather than forward; either way it is whole or absent). Writing the values
//! twice cost 20 % more data folder in a sled-only test (200,000 entries of 800 bytes in
//! writes of 100: 1,790 bytes per entry with full records, 1,486 without any record, 1,478
//! with key-only ones), because sled reclaims the space of a removed record only with the
//! segment that held it. Rolling back is safe because the keys' partition lock is held from
//! the record's insert to its removal: any later write of those keys comes after the removal
//! in the log, so a surviving record means none of them was written again.
//!
//! Readers may see some keys of a write applied and others not while it is being applied, as
//! they could not under `apply_batch`'s lock: `KvStore` keeps that from showing (a point read
//! waits out a commit of its partition, a query page is read again, see its
//! `read_consistently`), as it does for the RAM tier's and the memory store's writes.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Space, StoreError};

/// The name of the intents' tree in the sled database.
pub(super) const TREE: &str = "intents";

/// One entry of a write: key, and the stored value (`None`: removed).
pub(super) type Entry = (Vec<u8>, Option<Vec<u8>>);

/// Hands out intent ids: unique among the intents of one opening (every intent found at
/// opening is removed before the first new one is made).
#[derive(Default)]
pub(super) struct Ids(AtomicU64);

impl Ids {
    pub(super) fn next(&self) -> [u8; 8] {
        self.0.fetch_add(1, Ordering::Relaxed).to_be_bytes()
    }
}

fn space_tag(space: Space) -> u8 {
    match space {
        Space::Tables => 0,
        Space::Entities => 1,
    }
}

/// The tag of a key-only record of a write of new keys: the keyspace's tag plus this.
const NEW_KEYS: u8 = 2;

/// The record of a write to `space` of `keys` that all held no value before: the keyspace's
/// tag plus [`NEW_KEYS`], then per key `key length u32, key`, little-endian. It decodes as the
/// removal of every key, which is what opening applies.
pub(super) fn encode_new_keys<'a>(
    space: Space,
    keys: impl Iterator<Item = &'a [u8]> + Clone,
) -> Vec<u8> {
    let size: usize = keys.clone().map(|k| 4 + k.len()).sum();
    let mut out = Vec::with_capacity(1 + size);
    out.push(space_tag(space) + NEW_KEYS);
    for k in keys {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
    }
    out
}

/// The intent record of a write of `entries` to `space`: the keyspace's tag, then per entry
/// `key length u32, key, 0 | 1 + value length u32 + value`, little-endian.
pub(super) fn encode<'a>(
    space: Space,
    entries: impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> + Clone,
) -> Vec<u8> {
    let size: usize = entries
        .clone()
        .map(|(k, v)| 9 + k.len() + v.map_or(0, <[u8]>::len))
        .sum();
    let mut out = Vec::with_capacity(1 + size);
    out.push(space_tag(space));
    for (k, v) in entries {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        match v {
            Some(v) => {
                out.push(1);
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v);
            }
            None => out.push(0),
        }
    }
    out
}

/// The write an intent record holds (for a key-only record, the removal of its keys: the
/// write rolled back); `None` if the record is malformed.
pub(super) fn decode(record: &[u8]) -> Option<(Space, Vec<Entry>)> {
    fn take<'a>(p: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if p.len() < n {
            return None;
        }
        let (head, rest) = p.split_at(n);
        *p = rest;
        Some(head)
    }
    fn length(p: &mut &[u8]) -> Option<usize> {
        Some(u32::from_le_bytes(take(p, 4)?.try_into().ok()?) as usize)
    }
    let mut p = record;
    let tag = take(&mut p, 1)?[0];
    let space = match tag % NEW_KEYS {
        0 => Space::Tables,
        _ => Space::Entities,
    };
    let new_keys = match tag / NEW_KEYS {
        0 => false,
        1 => true,
        _ => return None,
    };
    let mut entries = Vec::new();
    while !p.is_empty() {
        let key_len = length(&mut p)?;
        let key = take(&mut p, key_len)?.to_vec();
        if new_keys {
            entries.push((key, None));
            continue;
        }
        let value = match take(&mut p, 1)?[0] {
            0 => None,
            1 => {
                let len = length(&mut p)?;
                Some(take(&mut p, len)?.to_vec())
            }
            _ => return None,
        };
        entries.push((key, value));
    }
    Some((space, entries))
}

/// Applies again every intent left in `intents` (a crash interrupted its write) to the tree
/// `tree_of` gives for its keyspace, or, for a key-only record, removes its keys; then removes
/// the intent. Returns how many there were.
pub(super) fn replay<'a>(
    intents: &sled::Tree,
    tree_of: impl Fn(Space) -> &'a sled::Tree,
) -> Result<usize, StoreError> {
    let io = |e: sled::Error| StoreError::Io {
        doing: "replaying an interrupted write".into(),
        source: std::sync::Arc::new(e),
    };
    let mut replayed = 0;
    for item in intents.iter() {
        let (id, record) = item.map_err(io)?;
        let (space, entries) = decode(&record).ok_or_else(|| {
            StoreError::Corrupt("an interrupted write's record is damaged".into())
        })?;
        let tree = tree_of(space);
        for (key, value) in entries {
            match value {
                Some(v) => tree.insert(key, v).map_err(io)?,
                None => tree.remove(key).map_err(io)?,
            };
        }
        intents.remove(id).map_err(io)?;
        replayed += 1;
    }
    Ok(replayed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn records_round_trip(
            space in prop_oneof![Just(Space::Tables), Just(Space::Entities)],
            entries in prop::collection::vec(
                (prop::collection::vec(any::<u8>(), 0..40),
                 prop::option::of(prop::collection::vec(any::<u8>(), 0..200))),
                0..20,
            ),
        ) {
            let record = encode(space, entries.iter().map(|(k, v)| (k.as_slice(), v.as_deref())));
            prop_assert_eq!(decode(&record), Some((space, entries)));
        }

        #[test]
        fn key_only_records_decode_as_removals(
            space in prop_oneof![Just(Space::Tables), Just(Space::Entities)],
            keys in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..20),
        ) {
            let record = encode_new_keys(space, keys.iter().map(Vec::as_slice));
            let removals: Vec<Entry> = keys.into_iter().map(|k| (k, None)).collect();
            prop_assert_eq!(decode(&record), Some((space, removals)));
        }

        #[test]
        fn damaged_records_never_panic(record in prop::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&record);
        }
    }

    #[test]
    fn replay_applies_each_intent_and_removes_it() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let (intents, entities, tables) = (
            db.open_tree(TREE).unwrap(),
            db.open_tree("e").unwrap(),
            db.open_tree("t").unwrap(),
        );
        entities.insert(b"gone", b"old".as_slice()).unwrap();
        entities.insert(b"a", b"old".as_slice()).unwrap();
        let write: Vec<(&[u8], Option<&[u8]>)> =
            vec![(b"a", Some(b"new")), (b"b", Some(b"2")), (b"gone", None)];
        intents
            .insert(
                1u64.to_be_bytes(),
                encode(Space::Entities, write.into_iter()),
            )
            .unwrap();
        let replayed = replay(&intents, |space| match space {
            Space::Entities => &entities,
            Space::Tables => &tables,
        })
        .unwrap();
        assert_eq!(replayed, 1);
        assert_eq!(
            entities.get(b"a").unwrap().as_deref(),
            Some(b"new".as_slice())
        );
        assert_eq!(
            entities.get(b"b").unwrap().as_deref(),
            Some(b"2".as_slice())
        );
        assert_eq!(entities.get(b"gone").unwrap(), None);
        assert!(intents.is_empty());
        assert!(tables.is_empty());
    }

    #[test]
    fn replay_rolls_back_a_write_of_new_keys() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let (intents, entities, tables) = (
            db.open_tree(TREE).unwrap(),
            db.open_tree("e").unwrap(),
            db.open_tree("t").unwrap(),
        );
        entities.insert(b"other", b"kept".as_slice()).unwrap();
        // A crash after the record and the first of its two keys.
        let keys: [&[u8]; 2] = [b"x", b"y"];
        intents
            .insert(
                1u64.to_be_bytes(),
                encode_new_keys(Space::Entities, keys.into_iter()),
            )
            .unwrap();
        entities.insert(b"x", b"new".as_slice()).unwrap();
        let replayed = replay(&intents, |space| match space {
            Space::Entities => &entities,
            Space::Tables => &tables,
        })
        .unwrap();
        assert_eq!(replayed, 1);
        assert_eq!(entities.get(b"x").unwrap(), None);
        assert_eq!(entities.get(b"y").unwrap(), None);
        assert_eq!(
            entities.get(b"other").unwrap().as_deref(),
            Some(b"kept".as_slice())
        );
        assert!(intents.is_empty());
    }
}
