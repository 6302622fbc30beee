//! Scalability targets: token buckets per partition (entities per second), per table and
//! per account (transactions per second). A request over any budget is refused as Azure
//! refuses it — 503 `ServerBusy` (or 500 `OperationTimedOut`, if so configured) — and
//! consumes nothing. A change set charges every one of its entities.
//!
//! Azure's public targets ("Scalability and performance targets for Table storage"): a
//! single partition up to 2,000 entities/s and an account up to 20,000 transactions/s, for
//! 1 KiB entities; over them the service answers 503 Server Busy or 500 Operation Timeout.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Instant;

use super::bucket::Bucket;
use super::RequestFacts;
use crate::protocol::{ApiError, ErrorCode};

/// Log target of the "over target" lines (they name the hot partition).
pub(crate) const LOG_TARGET: &str = "tablestore::realism";

/// Which error an over-budget request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum TargetError {
    /// 503 ServerBusy (Azure's usual answer to throttling).
    #[default]
    ServerBusy,
    /// 500 OperationTimedOut (Azure's answer when the request waited past its time).
    OperationTimedOut,
}

/// The budgets, per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct TargetRates {
    pub(crate) partition_entities: f64,
    pub(crate) table_transactions: f64,
    pub(crate) account_transactions: f64,
    pub(crate) error: TargetError,
}

impl Default for TargetRates {
    fn default() -> Self {
        TargetRates {
            partition_entities: 2_000.0,
            table_transactions: 20_000.0,
            account_transactions: 20_000.0,
            error: TargetError::ServerBusy,
        }
    }
}

/// Azure's message for an account over its operations target (Common REST API error
/// codes: ServerBusy, "Operations per second is over the account limit.").
const ACCOUNT_MESSAGE: &str = "Operations per second is over the account limit.";
/// Azure's message for OperationTimedOut (Common REST API error codes).
const TIMED_OUT_MESSAGE: &str = "The operation could not be completed within the permitted time.";

/// Most partition buckets kept; beyond it, buckets that have refilled (idle partitions)
/// are forgotten, so memory stays bounded whatever the key space.
const MAX_PARTITIONS: usize = 65_536;

#[derive(Default)]
struct Buckets {
    partitions: HashMap<(String, String, String), Bucket>,
    tables: HashMap<(String, String), Bucket>,
    accounts: HashMap<String, Bucket>,
}

/// The budgets and their buckets.
pub(crate) struct Targets {
    rates: TargetRates,
    buckets: Mutex<Buckets>,
}

impl Targets {
    pub(crate) fn new(rates: TargetRates) -> Targets {
        Targets {
            rates,
            buckets: Mutex::new(Buckets::default()),
        }
    }

    /// Charges a request against its partition, table and account budgets: all or nothing.
    pub(crate) fn charge(&self, facts: &RequestFacts) -> Result<(), ApiError> {
        self.charge_at(facts, Instant::now())
    }

    fn charge_at(&self, facts: &RequestFacts, now: Instant) -> Result<(), ApiError> {
        let r = self.rates;
        let entities = f64::from(facts.entities.max(1));
        let mut guard = self.buckets.lock();
        let b = &mut *guard;
        let table = facts.table.as_deref().map(str::to_ascii_lowercase);
        if b.partitions.len() >= MAX_PARTITIONS {
            b.partitions.retain(|_, bucket| {
                bucket.refill(r.partition_entities, now);
                bucket.tokens < r.partition_entities
            });
        }
        let partition_key = match (&table, &facts.partition_key) {
            (Some(t), Some(pk)) => Some((facts.account.clone(), t.clone(), pk.clone())),
            _ => None,
        };
        if let Some(key) = &partition_key {
            let bucket = b
                .partitions
                .entry(key.clone())
                .or_insert_with(|| Bucket::new(r.partition_entities, now));
            bucket.refill(r.partition_entities, now);
            if !bucket.fits(entities, r.partition_entities) {
                if bucket.should_log(now) {
                    tracing::warn!(
                        target: LOG_TARGET,
                        account = %key.0, table = %key.1, partition_key = %key.2,
                        rate = r.partition_entities,
                        "hot partition: over its target of {} entities/s; answering {}",
                        r.partition_entities, self.error_label()
                    );
                }
                return Err(self.error(None));
            }
        }
        if let Some(t) = &table {
            let bucket = b
                .tables
                .entry((facts.account.clone(), t.clone()))
                .or_insert_with(|| Bucket::new(r.table_transactions, now));
            bucket.refill(r.table_transactions, now);
            if !bucket.fits(entities, r.table_transactions) {
                if bucket.should_log(now) {
                    tracing::warn!(
                        target: LOG_TARGET,
                        account = %facts.account, table = %t,
                        partition_key = facts.partition_key.as_deref().unwrap_or("-"),
                        rate = r.table_transactions,
                        "table over its target of {} transactions/s; answering {}",
                        r.table_transactions, self.error_label()
                    );
                }
                return Err(self.error(None));
            }
        }
        let bucket = b
            .accounts
            .entry(facts.account.clone())
            .or_insert_with(|| Bucket::new(r.account_transactions, now));
        bucket.refill(r.account_transactions, now);
        if !bucket.fits(entities, r.account_transactions) {
            if bucket.should_log(now) {
                tracing::warn!(
                    target: LOG_TARGET,
                    account = %facts.account,
                    table = table.as_deref().unwrap_or("-"),
                    partition_key = facts.partition_key.as_deref().unwrap_or("-"),
                    rate = r.account_transactions,
                    "account over its target of {} transactions/s; answering {}",
                    r.account_transactions, self.error_label()
                );
            }
            return Err(self.error(Some(ACCOUNT_MESSAGE)));
        }
        // Everything fits: debit all three.
        bucket.tokens -= entities;
        if let Some(t) = &table {
            if let Some(bucket) = b.tables.get_mut(&(facts.account.clone(), t.clone())) {
                bucket.tokens -= entities;
            }
        }
        if let Some(key) = &partition_key {
            if let Some(bucket) = b.partitions.get_mut(key) {
                bucket.tokens -= entities;
            }
        }
        Ok(())
    }

    fn error_label(&self) -> &'static str {
        match self.rates.error {
            TargetError::ServerBusy => "503 ServerBusy",
            TargetError::OperationTimedOut => "500 OperationTimedOut",
        }
    }

    fn error(&self, busy_message: Option<&'static str>) -> ApiError {
        match self.rates.error {
            TargetError::ServerBusy => match busy_message {
                Some(m) => ApiError::with_message(ErrorCode::ServerBusy, m),
                None => ApiError::new(ErrorCode::ServerBusy),
            },
            TargetError::OperationTimedOut => {
                ApiError::with_message(ErrorCode::OperationTimedOut, TIMED_OUT_MESSAGE)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realism::{OperationKind, Priced};
    use std::time::Duration;

    fn facts(pk: &str, entities: u32) -> RequestFacts {
        RequestFacts {
            account: "a".into(),
            table: Some("T".into()),
            operation: "InsertEntity",
            kind: OperationKind::Write,
            method: "POST".into(),
            partition_key: Some(pk.into()),
            entities,
            priced: Priced::Free,
        }
    }

    fn rates(partition: f64, table: f64, account: f64) -> TargetRates {
        TargetRates {
            partition_entities: partition,
            table_transactions: table,
            account_transactions: account,
            error: TargetError::ServerBusy,
        }
    }

    #[test]
    fn a_partition_gets_its_rate_and_no_more() {
        let t = Targets::new(rates(10.0, 1000.0, 1000.0));
        let start = Instant::now();
        let ok = (0..20)
            .filter(|_| t.charge_at(&facts("p", 1), start).is_ok())
            .count();
        assert_eq!(ok, 10, "one second of burst");
        // Other partitions are unaffected.
        assert!(t.charge_at(&facts("q", 1), start).is_ok());
        // Half a second later, five more fit.
        let later = start + Duration::from_millis(500);
        let ok = (0..20)
            .filter(|_| t.charge_at(&facts("p", 1), later).is_ok())
            .count();
        assert_eq!(ok, 5);
    }

    #[test]
    fn batches_count_their_entities_and_refusals_cost_nothing() {
        let t = Targets::new(rates(100.0, 1000.0, 1000.0));
        let now = Instant::now();
        assert!(t.charge_at(&facts("p", 60), now).is_ok());
        let e = t.charge_at(&facts("p", 60), now).unwrap_err();
        assert_eq!(e.code, ErrorCode::ServerBusy);
        assert_eq!(e.status().as_u16(), 503);
        // The refused 60 were not debited: 40 still fit.
        assert!(t.charge_at(&facts("p", 40), now).is_ok());
    }

    #[test]
    fn the_account_budget_spans_partitions_and_says_so() {
        let t = Targets::new(rates(1000.0, 1000.0, 5.0));
        let now = Instant::now();
        for i in 0..5 {
            assert!(t.charge_at(&facts(&i.to_string(), 1), now).is_ok());
        }
        let e = t.charge_at(&facts("9", 1), now).unwrap_err();
        assert_eq!(e.message, ACCOUNT_MESSAGE);
    }

    #[test]
    fn operation_timed_out_when_configured() {
        let mut r = rates(1.0, 10.0, 10.0);
        r.error = TargetError::OperationTimedOut;
        let t = Targets::new(r);
        let now = Instant::now();
        assert!(t.charge_at(&facts("p", 1), now).is_ok());
        let e = t.charge_at(&facts("p", 1), now).unwrap_err();
        assert_eq!(e.code, ErrorCode::OperationTimedOut);
        assert_eq!(e.status().as_u16(), 500);
    }
}
