//! The store's schema, embedded and versioned: `MIGRATIONS[i]` takes the schema from version
//! `i` to `i + 1`, and start-up applies the missing ones in one transaction. The version is
//! the one row of `schema_version`, read `FOR UPDATE`, so nodes starting together apply each
//! migration once (the others wait, then find it done) without advisory locks, which
//! distributed SQL engines lack. A database whose schema is newer than this binary is refused.
//!
//! Only SQL that PostgreSQL, CockroachDB and YugabyteDB all accept: no extensions, no serial
//! columns (table ids come from `counters`), keys and order in `bytea` (byte order, whatever
//! the collation).

use tokio_postgres::Client;

/// The schema version this binary writes and reads.
pub const CURRENT: i32 = MIGRATIONS.len() as i32;

const MIGRATIONS: &[&str] = &[
    // 1: tables, entities, pending purges, service properties, id counters.
    "CREATE TABLE IF NOT EXISTS tables (
        meta_key BYTEA PRIMARY KEY,   -- enc(account) ‖ lower-cased name (store/key.rs)
        account TEXT NOT NULL,
        name TEXT NOT NULL,           -- casing used at creation
        id BIGINT NOT NULL,
        acl BYTEA NOT NULL
    );
    CREATE TABLE IF NOT EXISTS entities (
        key BYTEA PRIMARY KEY,        -- table id ‖ enc(PartitionKey) ‖ enc(RowKey)
        ts BIGINT NOT NULL,           -- Timestamp in ticks; the ETag derives from it
        value BYTEA NOT NULL          -- store/codec.rs entity encoding
    );
    CREATE TABLE IF NOT EXISTS deleted_tables (id BIGINT PRIMARY KEY);
    CREATE TABLE IF NOT EXISTS service_properties (
        account TEXT PRIMARY KEY,
        properties BYTEA NOT NULL
    );
    CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL);
    INSERT INTO counters (name, value) VALUES ('table_id', 0) ON CONFLICT (name) DO NOTHING;",
];

/// The outcome of [`migrate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migrated {
    /// The schema is at [`CURRENT`]; `applied` migrations were run to get there.
    Current { applied: i32 },
    /// The database's schema is newer than this binary knows.
    Newer(i32),
}

/// Brings the schema to [`CURRENT`].
pub async fn migrate(client: &mut Client) -> Result<Migrated, tokio_postgres::Error> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_version (
                singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
                version INTEGER NOT NULL
            );
            INSERT INTO schema_version (singleton, version) VALUES (TRUE, 0)
                ON CONFLICT (singleton) DO NOTHING;",
        )
        .await?;
    let tx = client.transaction().await?;
    let found: i32 = tx
        .query_one(
            "SELECT version FROM schema_version WHERE singleton FOR UPDATE",
            &[],
        )
        .await?
        .get(0);
    if found > CURRENT {
        return Ok(Migrated::Newer(found));
    }
    for sql in &MIGRATIONS[found as usize..] {
        tx.batch_execute(sql).await?;
    }
    tx.execute(
        "UPDATE schema_version SET version = $1 WHERE singleton",
        &[&CURRENT],
    )
    .await?;
    tx.commit().await?;
    Ok(Migrated::Current {
        applied: CURRENT - found,
    })
}
