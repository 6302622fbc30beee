//! Entity group transactions: checks a change set against Azure's rules, then applies it
//! with one atomic `Store::commit` (one lock, one backend batch, one durable flush). Knows
//! nothing about multipart or HTTP; `server::handlers::batch` decodes and encodes.

use std::collections::HashSet;

use crate::model::WriteOp;
use crate::store::{CommitError, Committed, Store, TableId};

/// Most operations in one change set.
pub const MAX_OPERATIONS: usize = 100;

/// A rule of entity group transactions that a change set breaks, at an operation index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleViolation {
    /// More than 100 operations.
    TooManyOperations,
    /// An operation addresses another table than operation 0.
    DifferentTables,
    /// An operation's PartitionKey differs from operation 0's.
    DifferentPartitions,
    /// The entity already appeared earlier in the change set.
    DuplicateRow,
}

/// Checks the change-set rules. Returns the first violation and the index Azure reports for
/// it: the first operation that breaks it, and index 99 for the count limit (as Azure
/// reports a 101-operation change set, spec §7.3).
pub fn check_rules(ops: &[(&str, &WriteOp)]) -> Result<(), (usize, RuleViolation)> {
    if ops.len() > MAX_OPERATIONS {
        return Err((MAX_OPERATIONS - 1, RuleViolation::TooManyOperations));
    }
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

/// Applies a checked change set atomically: every operation or none. Durability is the
/// caller's: the server acknowledges after its group commit covers the change set.
pub fn execute(
    store: &dyn Store,
    table: TableId,
    ops: &[WriteOp],
) -> Result<Committed, CommitError> {
    store.commit_unsynced(table, ops)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{EntityKey, IfMatch, TableRef, WriteKind};
    use crate::store::memory::MemoryKv;
    use crate::store::{Durability, KvStore, StoreError};

    fn op(kind: WriteKind, pk: &str, rk: &str) -> WriteOp {
        WriteOp {
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

    #[test]
    fn a_failing_operation_leaves_nothing_behind() {
        let store = KvStore::open(MemoryKv::new(), Durability::Durable).unwrap();
        let info = store.create_table(&TableRef::new("a", "tbl")).unwrap();
        store
            .commit(info.id, &[op(WriteKind::Insert, "p", "57")])
            .unwrap();
        let ops: Vec<WriteOp> = (0..100)
            .map(|i| op(WriteKind::Insert, "p", &i.to_string()))
            .collect();
        let err = execute(&*store, info.id, &ops).unwrap_err();
        assert_eq!(
            (err.index, err.error),
            (57, StoreError::EntityAlreadyExists)
        );
        let left: Vec<_> = store
            .scan(info.id, &crate::store::KeyRange::all())
            .collect();
        assert_eq!(left.len(), 1, "only the pre-existing entity remains");
    }
}
