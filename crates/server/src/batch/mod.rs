//! Entity group transactions: a change set's rules (one table, one partition, at most 100
//! operations, each entity once), the lookup of its table, and one atomic commit whose
//! outcome is a Timestamp per operation or the index of the one that failed (preconditions
//! are checked inside the store's commit, never before it). Knows nothing about multipart,
//! HTTP or Azure's error codes: `protocol::batch` decodes the request and encodes each
//! operation's sub-response, `exec` drives the change set, and the server maps a broken rule
//! to Azure's error. Depends on `model` and the `store` contract only.

use std::collections::HashSet;

use crate::model::names::NameCase;
use crate::model::{EdmDateTime, TableRef, WriteOp};
use crate::store::{Store, StoreError, TableInfo};

/// Most operations in one change set.
pub(crate) const MAX_OPERATIONS: usize = 100;

/// A rule of entity group transactions that a change set breaks, at an operation index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RuleViolation {
    /// More than 100 operations.
    TooManyOperations,
    /// An operation addresses another table than operation 0.
    DifferentTables,
    /// An operation's PartitionKey differs from operation 0's.
    DifferentPartitions,
    /// The entity already appeared earlier in the change set.
    DuplicateRow,
    /// A query batch holds another operation than one Get Entity.
    QueryNotSingleRetrieve,
}

/// Checks the operation count alone, before the operations are decoded: Azure reports a
/// change set of more than 100 operations at index 99 (docs/compatibility.md, entity group
/// transactions; Azure docs: "Performing entity group transactions" sets the limit).
pub(crate) fn check_count(count: usize) -> Result<(), (usize, RuleViolation)> {
    if count > MAX_OPERATIONS {
        return Err((MAX_OPERATIONS - 1, RuleViolation::TooManyOperations));
    }
    Ok(())
}

/// Checks the change-set rules. Returns the first violation and the index Azure reports for
/// it: the first operation that breaks it, and index 99 for the count limit.
pub(crate) fn check_rules(ops: &[(&str, &WriteOp)]) -> Result<(), (usize, RuleViolation)> {
    check_count(ops.len())?;
    let Some((table, first)) = ops.first() else {
        return Ok(());
    };
    let mut seen = HashSet::with_capacity(ops.len());
    for (index, &(t, op)) in ops.iter().enumerate() {
        if !t.eq_ignore_ascii_case(table) {
            return Err((index, RuleViolation::DifferentTables));
        }
        if op.key.partition_key != first.key.partition_key {
            return Err((index, RuleViolation::DifferentPartitions));
        }
        if !seen.insert(op.key.row_key.as_str()) {
            return Err((index, RuleViolation::DuplicateRow));
        }
    }
    Ok(())
}

/// The operations of one change set: operation `i` writes `ops[i]` into the table its URL
/// named, `tables[i]` (kept apart so the store gets the writes as one slice).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ChangeSet {
    pub(crate) tables: Vec<String>,
    pub(crate) ops: Vec<WriteOp>,
}

impl ChangeSet {
    pub(crate) fn with_capacity(n: usize) -> ChangeSet {
        ChangeSet {
            tables: Vec::with_capacity(n),
            ops: Vec::with_capacity(n),
        }
    }

    pub(crate) fn push(&mut self, table: String, op: WriteOp) {
        self.tables.push(table);
        self.ops.push(op);
    }
}

/// Why a change set was not applied; nothing of it was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The change set breaks a rule of entity group transactions.
    Rule(RuleViolation),
    /// The store refused the operation (a precondition, a missing table or entity) or failed.
    Store(StoreError),
}

/// A change set that failed at operation `index`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failed {
    pub(crate) index: usize,
    pub(crate) failure: Failure,
}

/// A change set that was applied (as durably as the store promises): the table and each
/// operation's Timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Applied {
    pub(crate) table: TableInfo,
    pub(crate) stamps: Vec<EdmDateTime>,
}

/// Checks a change set against the rules (see [`check_rules`]).
pub(crate) fn check(changes: &ChangeSet) -> Result<(), Failed> {
    let pairs: Vec<(&str, &WriteOp)> = changes
        .tables
        .iter()
        .map(String::as_str)
        .zip(&changes.ops)
        .collect();
    check_rules(&pairs).map_err(|(index, rule)| Failed {
        index,
        failure: Failure::Rule(rule),
    })
}

/// Executes a change set addressed to `account`: checks the rules, resolves the table and
/// applies every operation or none with one `Store::commit`. An empty change set does
/// nothing (`None`).
pub(crate) async fn execute(
    store: &dyn Store,
    account: &str,
    case: NameCase,
    changes: &ChangeSet,
) -> Result<Option<Applied>, Failed> {
    check(changes)?;
    let Some(table) = changes.tables.first() else {
        return Ok(None);
    };
    let store_failure = |index, error| Failed {
        index,
        failure: Failure::Store(error),
    };
    let info = store
        .get_table(&TableRef::in_case(account, table.as_str(), case))
        .await
        .map_err(|e| store_failure(0, e))?
        .ok_or_else(|| store_failure(0, StoreError::TableNotFound))?;
    let stamps = store
        .commit(info.id, &changes.ops)
        .await
        .map_err(|e| store_failure(e.index, e.error))?;
    Ok(Some(Applied {
        table: info,
        stamps,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EntityKey, IfMatch, TableRef, WriteKind};
    use crate::store::kv::memory::MemoryKv;
    use crate::store::{Durability, KvStore, StoreError};

    fn op(kind: WriteKind, pk: &str, rk: &str) -> WriteOp {
        WriteOp {
            limits: Default::default(),
            kind,
            key: EntityKey {
                partition_key: pk.into(),
                row_key: rk.into(),
            },
            properties: Vec::new(),
            if_match: IfMatch::Any,
        }
    }

    fn t(o: WriteOp) -> (&'static str, WriteOp) {
        ("tbl", o)
    }

    fn check(ops: &[(&'static str, WriteOp)]) -> Result<(), (usize, RuleViolation)> {
        let refs: Vec<(&str, &WriteOp)> = ops.iter().map(|(t, o)| (*t, o)).collect();
        check_rules(&refs)
    }

    #[test]
    fn rules_report_the_offending_index() {
        let ok = vec![
            t(op(WriteKind::Insert, "p", "1")),
            t(op(WriteKind::Insert, "p", "2")),
        ];
        assert_eq!(check(&ok), Ok(()));
        let parts = vec![
            t(op(WriteKind::Insert, "p", "1")),
            t(op(WriteKind::Insert, "q", "2")),
        ];
        assert_eq!(check(&parts), Err((1, RuleViolation::DifferentPartitions)));
        let dup = vec![
            t(op(WriteKind::Merge, "p", "1")),
            t(op(WriteKind::Insert, "p", "2")),
            t(op(WriteKind::Update, "p", "1")),
        ];
        assert_eq!(check(&dup), Err((2, RuleViolation::DuplicateRow)));
        let tables = vec![
            t(op(WriteKind::Insert, "p", "1")),
            ("other", op(WriteKind::Insert, "p", "2")),
        ];
        assert_eq!(check(&tables), Err((1, RuleViolation::DifferentTables)));
        let many: Vec<_> = (0..101)
            .map(|i| t(op(WriteKind::Insert, "p", &i.to_string())))
            .collect();
        assert_eq!(check(&many), Err((99, RuleViolation::TooManyOperations)));
    }

    /// The keys of a table's entities.
    async fn keys(store: &dyn Store, table: crate::store::TableId) -> Vec<(String, String)> {
        crate::store::read_fn(store, table, |rows, keys: &mut Vec<(String, String)>| {
            rows.scan_raw(&crate::store::KeyRange::all(), &mut |row| {
                keys.push(row.keys().expect("keys"));
                true
            })
        })
        .await
        .expect("scan")
    }

    #[tokio::test]
    async fn a_failing_operation_leaves_nothing_behind() {
        let store = KvStore::open(MemoryKv::new(), Durability::Durable).unwrap();
        let info = store
            .create_table(&TableRef::new("a", "tbl"))
            .await
            .unwrap();
        store
            .commit(info.id, &[op(WriteKind::Insert, "p", "57")])
            .await
            .unwrap();
        let ops: Vec<WriteOp> = (0..100)
            .map(|i| op(WriteKind::Insert, "p", &i.to_string()))
            .collect();
        let changes = ChangeSet {
            tables: vec!["TBL".into(); ops.len()],
            ops,
        };
        let err = execute(&*store, "a", NameCase::Insensitive, &changes)
            .await
            .unwrap_err();
        assert_eq!(
            (err.index, err.failure),
            (57, Failure::Store(StoreError::EntityAlreadyExists))
        );
        let left = keys(&*store, info.id).await;
        assert_eq!(left.len(), 1, "only the pre-existing entity remains");
    }

    #[tokio::test]
    async fn execute_checks_rules_and_the_table_before_writing() {
        let store = KvStore::open(MemoryKv::new(), Durability::Durable).unwrap();
        let info = store
            .create_table(&TableRef::new("a", "tbl"))
            .await
            .unwrap();
        let mut changes = ChangeSet::with_capacity(2);
        changes.push("tbl".into(), op(WriteKind::Insert, "p", "1"));
        changes.push("tbl".into(), op(WriteKind::Insert, "q", "2"));
        let err = execute(&*store, "a", NameCase::Insensitive, &changes)
            .await
            .unwrap_err();
        assert_eq!(
            (err.index, err.failure),
            (1, Failure::Rule(RuleViolation::DifferentPartitions))
        );
        let mut missing = ChangeSet::default();
        missing.push("nosuch".into(), op(WriteKind::Insert, "p", "1"));
        let err = execute(&*store, "a", NameCase::Insensitive, &missing)
            .await
            .unwrap_err();
        assert_eq!(
            (err.index, err.failure),
            (0, Failure::Store(StoreError::TableNotFound))
        );
        assert_eq!(
            execute(&*store, "a", NameCase::Insensitive, &ChangeSet::default()).await,
            Ok(None)
        );
        let mut good = ChangeSet::default();
        good.push("tbl".into(), op(WriteKind::Insert, "p", "1"));
        good.push("TBL".into(), op(WriteKind::InsertOrMerge, "p", "2"));
        let applied = execute(&*store, "a", NameCase::Insensitive, &good)
            .await
            .unwrap()
            .expect("applied");
        assert_eq!((applied.table.id, applied.stamps.len()), (info.id, 2));
        assert!(applied.stamps[0] < applied.stamps[1]);
        assert_eq!(keys(&*store, info.id).await.len(), 2);
    }

    #[test]
    fn the_count_limit_is_reported_at_index_99() {
        assert_eq!(
            check_count(101),
            Err((99, RuleViolation::TooManyOperations))
        );
        assert_eq!(check_count(100), Ok(()));
    }
}
