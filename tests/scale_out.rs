//! Several tablestore nodes over one PostgreSQL database: the guarantees of docs/scale-out.md,
//! each proven through different nodes. Every test takes its own database in the binary's one
//! PostgreSQL cluster (tests/common/postgres.rs); the database-restart test runs its own.

mod common;

use common::postgres::{Durability, PgCluster};

/// The fixture itself: a cluster starts, hands out databases, survives a restart with its
/// data (the restart test below relies on this), and leaves nothing behind when dropped.
#[test]
fn postgres_fixture_creates_databases_and_restarts() {
    let pg = PgCluster::start(Durability::Fast);
    let url = pg.fresh_database("fixture");
    let db = url.rsplit('/').next().unwrap().to_string();
    assert!(url.starts_with("postgres://tablestore@127.0.0.1:"), "{url}");
    pg.psql(
        &db,
        "CREATE TABLE t (k int PRIMARY KEY); INSERT INTO t VALUES (7)",
    );
    pg.restart();
    assert!(pg.is_ready(), "{}", pg.log());
    assert_eq!(pg.psql(&db, "SELECT k FROM t"), "7");
    pg.stop();
    assert!(!pg.is_ready());
    pg.start_again();
    assert_eq!(pg.psql(&db, "SELECT count(*) FROM t"), "1");
    assert!(!pg.log().is_empty());
    let root = pg.root().to_path_buf();
    assert!(root.join("data").is_dir());
    drop(pg);
    assert!(!root.exists(), "{} is left behind", root.display());
}

/// The shared cluster is one per binary and gives every caller distinct databases.
#[test]
fn shared_cluster_hands_out_distinct_databases() {
    let a = PgCluster::shared().fresh_database("shared");
    let b = PgCluster::shared().fresh_database("shared");
    assert_ne!(a, b);
    assert_eq!(
        PgCluster::shared().psql("postgres", "SELECT 1"),
        "1",
        "the shared cluster answers"
    );
}
