//! [`StoreState`] on PostgreSQL. An image is read in one `REPEATABLE READ` transaction (one
//! snapshot of the database, whatever other nodes write meanwhile); staged tables take ids
//! from the `counters` row and are listed in `deleted_tables` (purged after a crash) until
//! the switch, which is one transaction: the scope's table rows and service properties out,
//! the staged ones in. Other nodes sharing the database see the switch as any transaction:
//! each statement sees the state before it or after it.

use async_trait::async_trait;
use tokio_postgres::Transaction;

use super::{from_db_error, key, KeyRange, PgStore, Shared, StoreError};
use crate::store::codec;
use crate::store::state::{
    Image, ImageTable, Installed, Staged, StagedTable, StateScope, StoreState,
};

/// Entities inserted per statement while staging.
const STAGE_CHUNK: usize = 1000;

impl Shared {
    fn db(&self) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
        move |e| from_db_error(&self.target, &e)
    }

    async fn capture(&self, scope: &StateScope) -> Result<Image, StoreError> {
        let db = self.db();
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(&db)?;
        let account = scope.account();
        let tables = tx
            .query(
                "SELECT meta_key, account, name, id, acl FROM tables \
                 WHERE $1::TEXT IS NULL OR account = $1 ORDER BY meta_key",
                &[&account],
            )
            .await
            .map_err(&db)?;
        let mut image = Image::empty(scope.clone());
        for row in tables {
            let meta_key: Vec<u8> = row.get(0);
            let id: i64 = row.get(3);
            let (start, end) = bounds(id);
            let rows = tx
                .query(
                    "SELECT key, value FROM entities WHERE key >= $1 AND key < $2 ORDER BY key",
                    &[&start, &end],
                )
                .await
                .map_err(&db)?;
            image.tables.push(ImageTable {
                account: row.get(1),
                identity: key::table_identity_of(&meta_key).unwrap_or_default(),
                name: row.get(2),
                acl: row.get(4),
                rows: rows
                    .iter()
                    .map(|r| {
                        let k: &[u8] = r.get(0);
                        let v: &[u8] = r.get(1);
                        (k.get(8..).unwrap_or_default().into(), v.into())
                    })
                    .collect(),
            });
        }
        let properties = tx
            .query(
                "SELECT account, properties FROM service_properties \
                 WHERE $1::TEXT IS NULL OR account = $1 ORDER BY account",
                &[&account],
            )
            .await
            .map_err(&db)?;
        image.service_properties = properties.iter().map(|r| (r.get(0), r.get(1))).collect();
        tx.commit().await.map_err(&db)?;
        Ok(image)
    }

    async fn stage(&self, image: &Image) -> Result<Staged, StoreError> {
        let db = self.db();
        let n = image.tables.len() as i64;
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&db)?;
        let last: i64 = tx
            .query_one(
                "UPDATE counters SET value = value + $1 WHERE name = 'table_id' RETURNING value",
                &[&n],
            )
            .await
            .map_err(&db)?
            .get(0);
        let first = last - n + 1;
        let ids: Vec<i64> = (first..=last).collect();
        tx.execute(
            "INSERT INTO deleted_tables (id) SELECT * FROM UNNEST($1::BIGINT[]) ON CONFLICT (id) DO NOTHING",
            &[&ids],
        )
        .await
        .map_err(&db)?;
        tx.commit().await.map_err(&db)?;
        let mut staged = Staged {
            scope: image.scope.clone(),
            tables: Vec::with_capacity(image.tables.len()),
            service_properties: image.service_properties.clone(),
            entities: image.entities(),
        };
        for (id, table) in ids.iter().zip(&image.tables) {
            staged.tables.push(StagedTable {
                id: *id as u64,
                account: table.account.clone(),
                identity: table.identity.clone(),
                name: table.name.clone(),
                acl: table.acl.clone(),
            });
            let prefix = key::table_prefix(*id as u64);
            for chunk in table.rows.chunks(STAGE_CHUNK) {
                let mut keys = Vec::with_capacity(chunk.len());
                let mut stamps = Vec::with_capacity(chunk.len());
                let mut values = Vec::with_capacity(chunk.len());
                for (suffix, value) in chunk {
                    let mut k = prefix.to_vec();
                    k.extend_from_slice(suffix);
                    keys.push(k);
                    let ts = codec::decode_entity_timestamp(value)
                        .ok_or_else(|| StoreError::Corrupt("an entity of an image".into()))?;
                    stamps.push(ts.0);
                    values.push(value.to_vec());
                }
                let client = self.client().await?;
                client
                    .execute(
                        "INSERT INTO entities (key, ts, value) \
                         SELECT * FROM UNNEST($1::BYTEA[], $2::BIGINT[], $3::BYTEA[])",
                        &[&keys, &stamps, &values],
                    )
                    .await
                    .map_err(&db)?;
            }
        }
        Ok(staged)
    }

    async fn switch(&self, staged: &Staged) -> Result<(Vec<i64>, Installed), StoreError> {
        let db = self.db();
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(&db)?;
        let account = staged.scope.account();
        let removed: Vec<i64> = tx
            .query(
                "DELETE FROM tables WHERE $1::TEXT IS NULL OR account = $1 RETURNING id",
                &[&account],
            )
            .await
            .map_err(&db)?
            .iter()
            .map(|r| r.get(0))
            .collect();
        tx.execute(
            "INSERT INTO deleted_tables (id) SELECT * FROM UNNEST($1::BIGINT[]) ON CONFLICT (id) DO NOTHING",
            &[&removed],
        )
        .await
        .map_err(&db)?;
        let staged_ids: Vec<i64> = staged.tables.iter().map(|t| t.id as i64).collect();
        tx.execute(
            "DELETE FROM deleted_tables WHERE id = ANY($1::BIGINT[])",
            &[&staged_ids],
        )
        .await
        .map_err(&db)?;
        insert_tables(&tx, &staged.tables).await.map_err(&db)?;
        tx.execute(
            "DELETE FROM service_properties WHERE $1::TEXT IS NULL OR account = $1",
            &[&account],
        )
        .await
        .map_err(&db)?;
        for (account, properties) in &staged.service_properties {
            tx.execute(
                "INSERT INTO service_properties (account, properties) VALUES ($1, $2)",
                &[account, properties],
            )
            .await
            .map_err(&db)?;
        }
        tx.commit().await.map_err(&db)?;
        let installed = Installed {
            tables_removed: removed.len(),
            tables: staged.tables.len(),
            entities: staged.entities,
        };
        Ok((removed, installed))
    }
}

async fn insert_tables(
    tx: &Transaction<'_>,
    tables: &[StagedTable],
) -> Result<(), tokio_postgres::Error> {
    for t in tables {
        let meta_key = key::table_meta_key(&t.account, &t.identity);
        tx.execute(
            "INSERT INTO tables (meta_key, account, name, id, acl) VALUES ($1, $2, $3, $4, $5)",
            &[&meta_key, &t.account, &t.name, &(t.id as i64), &t.acl],
        )
        .await?;
    }
    Ok(())
}

/// A table's entity keys: `[start, end)`.
fn bounds(id: i64) -> (Vec<u8>, Vec<u8>) {
    let (start, end) = KeyRange::all().to_bytes(id as u64);
    let unwrap = |b: std::ops::Bound<Vec<u8>>, default: Vec<u8>| match b {
        std::ops::Bound::Included(k) | std::ops::Bound::Excluded(k) => k,
        std::ops::Bound::Unbounded => default,
    };
    (unwrap(start, Vec::new()), unwrap(end, vec![0xFF; 9]))
}

#[async_trait]
impl StoreState for PgStore {
    async fn capture(&self, scope: &StateScope) -> Result<Image, StoreError> {
        self.shared.capture(scope).await
    }

    async fn stage(&self, image: &Image) -> Result<Staged, StoreError> {
        self.shared.stage(image).await
    }

    async fn switch(&self, staged: Staged) -> Result<Installed, StoreError> {
        match self.shared.switch(&staged).await {
            Ok((removed, installed)) => {
                for id in removed {
                    self.spawn_purge(id);
                }
                Ok(installed)
            }
            Err(e) => {
                self.discard(staged).await;
                Err(e)
            }
        }
    }

    async fn discard(&self, staged: Staged) {
        for t in staged.tables {
            self.spawn_purge(t.id as i64);
        }
    }
}
