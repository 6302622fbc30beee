//! The store's schema, embedded and versioned: `MIGRATIONS[i]` takes the schema from version
//! `i` to `i + 1`, and start-up applies the missing ones in one transaction. The version is
//! the one row of `schema_version`, read `FOR UPDATE`, so nodes starting together apply each
//! migration once (the others wait, then find it done) without advisory locks, which
//! distributed SQL engines lack. A database whose schema is newer than this binary is refused.
//!
//! `CREATE … IF NOT EXISTS` is not safe between concurrent sessions in PostgreSQL: when two
//! create the same object at once, one fails on the catalog's unique indexes (42710, 42P07,
//! 42P06 or 23505) instead of finding it. Such a failure means another node did the work, so
//! the caller runs the whole bootstrap again ([`created_concurrently`]).
//!
//! Only SQL that PostgreSQL, CockroachDB and YugabyteDB all accept: no extensions, no serial
//! columns (table ids come from `counters`), keys and order in `bytea` (byte order, whatever
//! the collation).

use tokio_postgres::error::SqlState;
use tokio_postgres::Client;

/// The schema version this binary writes and reads.
pub const CURRENT: i32 = MIGRATIONS.len() as i32;

const MIGRATIONS: &[&str] = &[
    // 1: tables, entities, pending purges, service properties, id counters.
    "CREATE TABLE IF NOT EXISTS tables (
        meta_key BYTEA PRIMARY KEY,   -- enc(account) ‖ lower-cased name (encoding/key.rs)
        account TEXT NOT NULL,
        name TEXT NOT NULL,           -- casing used at creation
        id BIGINT NOT NULL,
        acl BYTEA NOT NULL
    );
    CREATE TABLE IF NOT EXISTS entities (
        key BYTEA PRIMARY KEY,        -- table id ‖ enc(PartitionKey) ‖ enc(RowKey)
        ts BIGINT NOT NULL,           -- Timestamp in ticks; the ETag derives from it
        value BYTEA NOT NULL          -- encoding/codec.rs entity encoding
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
pub(crate) enum Migrated {
    /// The schema is at [`CURRENT`]; `applied` migrations were run to get there.
    Current { applied: i32 },
    /// The database's schema is newer than this binary knows.
    Newer(i32),
}

/// Brings the schema to [`CURRENT`].
pub(crate) async fn migrate(client: &mut Client) -> Result<Migrated, tokio_postgres::Error> {
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

/// Whether `e` is the failure of a `CREATE … IF NOT EXISTS` (or of the first version row's
/// insert) that raced with another session creating the same object: the bootstrap should run
/// again and will find the object there.
pub(crate) fn created_concurrently(e: &tokio_postgres::Error) -> bool {
    e.code().is_some_and(|code| {
        *code == SqlState::DUPLICATE_OBJECT
            || *code == SqlState::DUPLICATE_TABLE
            || *code == SqlState::DUPLICATE_SCHEMA
            || *code == SqlState::UNIQUE_VIOLATION
    })
}
