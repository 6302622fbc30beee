use std::sync::Arc;

use super::*;
use crate::model::{EdmValue, EntityKey, IfMatch, Property, TableRef, WriteKind, WriteOp};
use crate::store::memory::MemoryKv;
use crate::store::{block_on, Durability, KvStore, Store};

fn memory_store() -> Arc<KvStore<MemoryKv>> {
    KvStore::open(MemoryKv::new(), Durability::Durable).unwrap()
}

fn table(account: &str, name: &str) -> TableRef {
    TableRef::new(account, name)
}

async fn fill(store: &dyn Store, account: &str, name: &str, rows: u32) {
    let info = store.create_table(&table(account, name)).await.unwrap();
    for i in 0..rows {
        let op = WriteOp {
            limits: Default::default(),
            kind: WriteKind::Insert,
            key: EntityKey {
                partition_key: "p".into(),
                row_key: format!("{i:05}"),
            },
            properties: vec![Property {
                name: "n".into(),
                value: EdmValue::Int32(i as i32),
            }],
            if_match: IfMatch::Any,
        };
        store.commit(info.id, &[op]).await.unwrap();
    }
}

async fn row_count(store: &dyn Store, account: &str, name: &str) -> Option<usize> {
    let info = store.get_table(&table(account, name)).await.unwrap()?;
    let image = store
        .state()
        .unwrap()
        .capture(&StateScope::Account(account.into()))
        .await
        .unwrap();
    image
        .tables
        .iter()
        .find(|t| t.name == info.name)
        .map(|t| t.rows.len())
}

/// A capture and an install give back exactly the tables, rows, ACLs and service
/// properties of the scope, and leave other accounts alone.
async fn round_trip(store: Arc<dyn Store>) {
    fill(&*store, "a", "People", 30).await;
    fill(&*store, "b", "Other", 5).await;
    store
        .set_table_acl(&table("a", "People"), b"acl".to_vec())
        .await
        .unwrap();
    store
        .set_service_properties("a", b"<props/>".to_vec())
        .await
        .unwrap();
    let state = store.state().unwrap();
    let saved = state
        .capture(&StateScope::Account("a".into()))
        .await
        .unwrap();
    assert_eq!(saved.tables.len(), 1);
    assert_eq!(saved.entities(), 30);
    assert_eq!(saved.tables[0].acl, b"acl");
    assert_eq!(
        saved.service_properties,
        vec![("a".into(), b"<props/>".to_vec())]
    );

    // Change account a: a table dropped, another added, properties changed.
    store.delete_table(&table("a", "People")).await.unwrap();
    fill(&*store, "a", "Later", 3).await;
    store
        .set_service_properties("a", b"<other/>".to_vec())
        .await
        .unwrap();

    let installed = install(state, &saved).await.unwrap();
    assert_eq!(installed.tables_removed, 1);
    assert_eq!((installed.tables, installed.entities), (1, 30));
    assert_eq!(row_count(&*store, "a", "People").await, Some(30));
    assert!(store
        .get_table(&table("a", "Later"))
        .await
        .unwrap()
        .is_none());
    let acl = store
        .get_table(&table("a", "People"))
        .await
        .unwrap()
        .unwrap()
        .acl;
    assert_eq!(acl, b"acl");
    assert_eq!(
        store.get_service_properties("a").await.unwrap(),
        Some(b"<props/>".to_vec())
    );
    // Account b untouched.
    assert_eq!(row_count(&*store, "b", "Other").await, Some(5));

    // The whole server back to nothing.
    install(state, &Image::empty(StateScope::Server))
        .await
        .unwrap();
    assert!(store.list_tables("a", None, 10).await.unwrap().is_empty());
    assert!(store.list_tables("b", None, 10).await.unwrap().is_empty());
    assert_eq!(store.get_service_properties("a").await.unwrap(), None);
    // New tables after a restore get ids never used before.
    let fresh = store.create_table(&table("a", "People")).await.unwrap();
    assert!(store
        .get_entity(fresh.id, "p", "00000")
        .await
        .unwrap()
        .is_none());
}

#[test]
fn memory_store_round_trips_a_scope() {
    block_on(round_trip(memory_store()));
}

#[test]
fn sled_store_round_trips_a_scope() {
    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::sled_kv::open_for_tests(dir.path());
    block_on(round_trip(store));
}

/// An image of the memory store shares the entities' bytes with the store: it copies keys.
#[test]
fn memory_images_share_the_entities_bytes() {
    let store = memory_store();
    block_on(fill(&*store, "a", "t", 10));
    let state = store.state().unwrap();
    let one = block_on(state.capture(&StateScope::Server)).unwrap();
    let two = block_on(state.capture(&StateScope::Server)).unwrap();
    for (a, b) in one.tables[0].rows.iter().zip(&two.tables[0].rows) {
        assert!(Arc::ptr_eq(&a.1, &b.1), "the same bytes, not a copy");
    }
}

/// A restore into the memory store keeps sharing the image's bytes: a snapshot restored
/// any number of times costs its keys, not its entities, again.
#[test]
fn memory_restores_share_the_images_bytes() {
    let store = memory_store();
    block_on(fill(&*store, "a", "t", 10));
    let state = store.state().unwrap();
    let image = block_on(state.capture(&StateScope::Server)).unwrap();
    block_on(install(state, &image)).unwrap();
    let again = block_on(state.capture(&StateScope::Server)).unwrap();
    for (a, b) in image.tables[0].rows.iter().zip(&again.tables[0].rows) {
        assert_eq!(a.0, b.0);
        assert!(Arc::ptr_eq(&a.1, &b.1), "the snapshot's bytes, not a copy");
    }
}

/// Staged tables stay out of sight until the switch; discarded ones never appear.
#[test]
fn staged_tables_are_invisible_until_switched() {
    let store = memory_store();
    block_on(async {
        fill(&*store, "a", "t", 4).await;
        let state = store.state().unwrap();
        let image = state.capture(&StateScope::Server).await.unwrap();
        let emptied = install(state, &Image::empty(StateScope::Server))
            .await
            .unwrap();
        assert_eq!(emptied.tables_removed, 1);
        let staged = state.stage(&image).await.unwrap();
        assert!(store.list_tables("a", None, 10).await.unwrap().is_empty());
        state.discard(staged).await;
        assert!(store.list_tables("a", None, 10).await.unwrap().is_empty());
        let staged = state.stage(&image).await.unwrap();
        state.switch(staged).await.unwrap();
        assert_eq!(row_count(&*store, "a", "t").await, Some(4));
    });
}

#[test]
fn snapshot_files_round_trip_and_refuse_damage() {
    let dir = tempfile::tempdir().unwrap();
    let store = memory_store();
    block_on(fill(&*store, "a", "t", 20));
    let image = block_on(store.state().unwrap().capture(&StateScope::Server)).unwrap();
    let shelf = Shelf::in_folder(dir.path());
    let name = SnapshotName::parse("seeded").unwrap();
    let info = shelf.save(&name, image.clone()).unwrap();
    assert_eq!((info.tables, info.entities), (1, 20));
    assert_eq!(*shelf.load(&name).unwrap(), image);
    assert_eq!(shelf.list().unwrap()[0].name, "seeded");
    assert!(shelf.is_durable());

    // Cut short or altered: refused as damaged, never half-read.
    let path = dir.path().join("seeded.snapshot");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
    match shelf.load(&name) {
        Err(ShelfError::Store(StoreError::Corrupt(m))) => assert!(m.contains("damaged"), "{m}"),
        other => panic!("{other:?}"),
    }
    let mut flipped = bytes.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x55;
    std::fs::write(&path, &flipped).unwrap();
    assert!(matches!(shelf.load(&name), Err(ShelfError::Store(_))));

    // A save a crash interrupted is removed when the shelf opens again.
    std::fs::write(dir.path().join("half.snapshot.tmp"), b"x").unwrap();
    let _ = Shelf::in_folder(dir.path());
    assert!(!dir.path().join("half.snapshot.tmp").exists());
    shelf.delete(&name).unwrap();
    assert!(matches!(shelf.delete(&name), Err(ShelfError::NotFound)));
    assert!(matches!(shelf.load(&name), Err(ShelfError::NotFound)));
}

#[test]
fn snapshot_names_are_never_paths() {
    for good in ["seeded", "a", "v1.2_base-line", &"x".repeat(64)] {
        assert!(SnapshotName::parse(good).is_ok(), "{good}");
    }
    for (bad, why) in [
        ("", BadName::Empty),
        ("../etc", BadName::PathCharacters),
        ("a/b", BadName::PathCharacters),
        ("a\\b", BadName::PathCharacters),
        (".hidden", BadName::PathCharacters),
        ("a..b", BadName::PathCharacters),
        ("a\0b", BadName::PathCharacters),
        ("a b", BadName::Character(' ')),
        ("naïve", BadName::Character('ï')),
    ] {
        assert_eq!(SnapshotName::parse(bad), Err(why), "{bad:?}");
    }
    assert_eq!(SnapshotName::parse(&"x".repeat(65)), Err(BadName::TooLong));
    assert!(BadName::PathCharacters
        .to_string()
        .contains("path characters"));
}
