//! What a PostgreSQL failure means for the store: retry the transaction (serialization
//! failure, deadlock), the database is unavailable (→ 503 ServerBusy), or a one-sentence
//! reason for an operator (bad URL, no rights, login refused, unknown database) — never the
//! driver's debug text.

use deadpool_postgres::PoolError;
use tokio_postgres::error::SqlState;

use crate::StoreError;

/// A failed database call, sorted by what the store does about it.
#[derive(Debug)]
pub(super) enum DbFailure {
    /// Serialization failure (40001) or deadlock (40P01): run the transaction again.
    Retry,
    /// Anything else: give up with this error.
    Fail(StoreError),
}

/// Where the store connects, as messages show it (never with the password).
#[derive(Debug, Clone)]
pub(crate) struct PgAddress {
    pub(crate) user: String,
    pub(crate) host: String,
    pub(crate) database: String,
}

impl PgAddress {
    pub(crate) fn from_config(config: &tokio_postgres::Config) -> PgAddress {
        use tokio_postgres::config::Host;
        let host = config
            .get_hosts()
            .iter()
            .zip(config.get_ports().iter().chain(std::iter::repeat(&5432)))
            .map(|(host, port)| match host {
                Host::Tcp(h) => format!("{h}:{port}"),
                Host::Unix(path) => format!("{}:{port}", path.display()),
            })
            .collect::<Vec<_>>()
            .join(",");
        let user = config.get_user().unwrap_or_default().to_string();
        let database = config
            .get_dbname()
            .map(str::to_string)
            .unwrap_or_else(|| user.clone());
        PgAddress {
            user,
            host: if host.is_empty() {
                "localhost:5432".into()
            } else {
                host
            },
            database,
        }
    }

    /// `postgres://user@host:port/database`, without the password.
    pub(crate) fn url(&self) -> String {
        format!("postgres://{}@{}/{}", self.user, self.host, self.database)
    }
}

/// Sorts a driver error raised while talking to the database at `target`.
pub(super) fn classify(target: &PgAddress, e: &tokio_postgres::Error) -> DbFailure {
    match e.code() {
        Some(code) if *code == SqlState::T_R_SERIALIZATION_FAILURE => DbFailure::Retry,
        Some(code) if *code == SqlState::T_R_DEADLOCK_DETECTED => DbFailure::Retry,
        Some(_) => DbFailure::Fail(from_db_error(target, e)),
        None => DbFailure::Fail(unavailable(target, e)),
    }
}

/// A driver error as a store error: unreachable/lost databases are `Unavailable`, refusals a
/// one-sentence `Io`.
pub(super) fn from_db_error(target: &PgAddress, e: &tokio_postgres::Error) -> StoreError {
    let Some(db) = e.as_db_error() else {
        return unavailable(target, e);
    };
    let code = db.code();
    let (user, database) = (&target.user, &target.database);
    if *code == SqlState::INSUFFICIENT_PRIVILEGE {
        return StoreError::database(format!(
            "the PostgreSQL user {user} lacks a right tablestore needs in database {database} ({}): grant it (e.g. GRANT CREATE ON SCHEMA public TO {user}) or use a user that owns the database",
            db.message()
        ));
    }
    if *code == SqlState::INVALID_PASSWORD || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
    {
        return StoreError::database(format!(
            "PostgreSQL at {} refused the login of user {user} ({}): check the user and password in --store",
            target.host,
            db.message()
        ));
    }
    if *code == SqlState::INVALID_CATALOG_NAME {
        return StoreError::database(format!(
            "PostgreSQL at {} has no database {database}: create it (createdb {database}) or name another one in --store",
            target.host
        ));
    }
    if *code == SqlState::ADMIN_SHUTDOWN
        || *code == SqlState::CRASH_SHUTDOWN
        || *code == SqlState::CANNOT_CONNECT_NOW
        || *code == SqlState::TOO_MANY_CONNECTIONS
        || code.code().starts_with("08")
    {
        return StoreError::unavailable(format!(
            "PostgreSQL at {} is not accepting work ({}); retry shortly",
            target.host,
            db.message()
        ));
    }
    StoreError::database(format!(
        "PostgreSQL at {} answered {} ({})",
        target.host,
        code.code(),
        db.message()
    ))
}

/// The database could not be reached or the connection was lost.
fn unavailable(target: &PgAddress, e: &tokio_postgres::Error) -> StoreError {
    // The driver's Display is one line ("error connecting to server: Connection refused
    // (os error 111)"); its source chain holds the I/O reason.
    let mut reason = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !reason.contains(&text) {
            reason = format!("{reason}: {text}");
        }
        source = s.source();
    }
    StoreError::unavailable(format!(
        "cannot reach the PostgreSQL database {} at {} ({reason}): check that it is running and that --store names it",
        target.database, target.host
    ))
}

/// A failure to get a connection from the pool.
pub(super) fn from_pool_error(target: &PgAddress, e: PoolError) -> StoreError {
    match e {
        PoolError::Backend(e) => from_db_error(target, &e),
        PoolError::Timeout(_) => StoreError::unavailable(format!(
            "no connection to the PostgreSQL database {} at {} became free in time: the database is slow or unreachable",
            target.database, target.host
        )),
        other => StoreError::unavailable(format!(
            "the connection pool for PostgreSQL at {} failed ({other})",
            target.host
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn the_target_never_shows_the_password() {
        let config =
            tokio_postgres::Config::from_str("postgres://alice:s3cret@db.local:6543/tables")
                .unwrap();
        let target = PgAddress::from_config(&config);
        assert_eq!(target.url(), "postgres://alice@db.local:6543/tables");
        assert!(!format!("{target:?}").contains("s3cret"));
        let config = tokio_postgres::Config::from_str("postgres://bob@h").unwrap();
        assert_eq!(
            PgAddress::from_config(&config).url(),
            "postgres://bob@h:5432/bob"
        );
    }
}
