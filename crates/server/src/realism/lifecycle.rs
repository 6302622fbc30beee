//! Deleted-name memory: after Delete Table, Azure keeps the name while it purges the
//! table's data (at least 40 seconds), and creating a table of that name — or touching it —
//! answers 409 `TableBeingDeleted` "The specified table is being deleted." until then
//! (Delete Table REST reference, Remarks).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::RequestFacts;
use crate::model::names::{table_identity, NameCase};
use crate::protocol::{ApiError, ErrorCode};

/// Names deleted less than `purge` ago, per account, by the table's identity under `case`
/// (Table storage's names are case-insensitive, Cosmos DB's case-sensitive). Entries expire
/// and are dropped as new ones arrive, so the map holds only the names deleted within one
/// purge period.
pub(crate) struct DeletedNames {
    purge: Duration,
    case: NameCase,
    names: Mutex<HashMap<(String, String), Instant>>,
}

impl DeletedNames {
    pub(crate) fn new(purge: Duration, case: NameCase) -> DeletedNames {
        DeletedNames {
            purge,
            case,
            names: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn remember(&self, facts: &RequestFacts) {
        self.remember_at(facts, Instant::now());
    }

    fn remember_at(&self, facts: &RequestFacts, now: Instant) {
        let Some(table) = &facts.table else { return };
        let mut names = self.names.lock();
        names.retain(|_, deleted| now.saturating_duration_since(*deleted) < self.purge);
        names.insert(
            (facts.account.clone(), table_identity(table, self.case)),
            now,
        );
    }

    /// Refuses any operation on a table name still being purged.
    pub(crate) fn check(&self, facts: &RequestFacts) -> Result<(), ApiError> {
        self.check_at(facts, Instant::now())
    }

    fn check_at(&self, facts: &RequestFacts, now: Instant) -> Result<(), ApiError> {
        let Some(table) = &facts.table else {
            return Ok(());
        };
        let names = self.names.lock();
        match names.get(&(facts.account.clone(), table_identity(table, self.case))) {
            Some(deleted) if now.saturating_duration_since(*deleted) < self.purge => {
                Err(ApiError::new(ErrorCode::TableBeingDeleted))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realism::{OperationKind, Priced};

    fn facts(account: &str, table: &str) -> RequestFacts {
        RequestFacts {
            account: account.into(),
            table: Some(table.into()),
            operation: "CreateTable",
            kind: OperationKind::Admin,
            method: "POST".into(),
            partition_key: None,
            entities: 1,
            priced: Priced::Free,
        }
    }

    #[test]
    fn a_deleted_name_is_refused_until_the_purge_ends() {
        let d = DeletedNames::new(Duration::from_secs(40), NameCase::Insensitive);
        let t0 = Instant::now();
        d.remember_at(&facts("a", "People"), t0);
        let e = d
            .check_at(&facts("a", "PEOPLE"), t0 + Duration::from_secs(39))
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::TableBeingDeleted);
        assert_eq!(e.status().as_u16(), 409);
        assert!(
            d.check_at(&facts("b", "people"), t0).is_ok(),
            "other account"
        );
        assert!(d.check_at(&facts("a", "others"), t0).is_ok());
        assert!(d
            .check_at(&facts("a", "people"), t0 + Duration::from_secs(40))
            .is_ok());
    }

    #[test]
    fn under_cosmos_only_the_same_name_is_refused() {
        let d = DeletedNames::new(Duration::from_secs(40), NameCase::Sensitive);
        let t0 = Instant::now();
        d.remember_at(&facts("a", "People"), t0);
        let e = d.check_at(&facts("a", "People"), t0).unwrap_err();
        assert_eq!(e.code, ErrorCode::TableBeingDeleted);
        assert!(
            d.check_at(&facts("a", "people"), t0).is_ok(),
            "another table"
        );
        assert!(
            d.check_at(&facts("a", "PEOPLE"), t0).is_ok(),
            "another table"
        );
    }

    #[test]
    fn expired_names_are_forgotten() {
        let d = DeletedNames::new(Duration::from_secs(1), NameCase::Insensitive);
        let t0 = Instant::now();
        for i in 0..100 {
            d.remember_at(&facts("a", &format!("t{i}")), t0);
        }
        d.remember_at(&facts("a", "last"), t0 + Duration::from_secs(2));
        assert_eq!(d.names.lock().len(), 1);
    }
}
