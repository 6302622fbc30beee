//! Production realism, every part off by default: scalability targets ([`targets`]), or
//! under `--flavor cosmos` request units ([`request_units`]) in their place, early page ends
//! ([`paging`]), the name of a just-deleted table staying unusable ([`lifecycle`]),
//! and fault injection ([`faults`]). The server consults [`Realism`] at named points — before
//! dispatch ([`Realism::before_dispatch`]), when a query page is cut ([`Realism::page_cut`])
//! and after commit ([`Realism::after_commit`]) — and, with every option off, skips them all
//! ([`Realism::is_active`] is one atomic load).
//!
//! Depends on `protocol::error` (the Azure errors it answers with) and on plain values the
//! server hands it ([`RequestFacts`]); never on `server`, `store` or `query`.

mod bucket;
pub(crate) mod faults;
pub(crate) mod lifecycle;
pub(crate) mod paging;
pub(crate) mod request_units;
pub(crate) mod targets;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::model::names::NameCase;
use crate::protocol::ApiError;
pub(crate) use faults::FaultSet;
pub(crate) use paging::PageBreaks;
pub(crate) use request_units::{Priced, PricedWrite, Served};
pub(crate) use targets::{TargetError, TargetRates};

/// What kind of work a request is; fault rules match it by this name or by the Azure
/// operation name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OperationKind {
    /// Get Entity, Query Entities, Query Tables, Get Table, ACL and service reads.
    Read,
    /// Insert, Update, Merge, Delete, Insert Or Replace, Insert Or Merge.
    Write,
    /// `$batch` (entity group transaction).
    Batch,
    /// Create Table, Delete Table, Set Table ACL, Set Service Properties.
    Admin,
}

impl OperationKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            OperationKind::Read => "read",
            OperationKind::Write => "write",
            OperationKind::Batch => "batch",
            OperationKind::Admin => "admin",
        }
    }
}

/// What the server knows about a request when realism is consulted.
#[derive(Debug, Clone)]
pub(crate) struct RequestFacts {
    /// The account whose data is addressed.
    pub(crate) account: String,
    /// The table addressed (for Create Table, the name in the body), if any.
    pub(crate) table: Option<String>,
    /// Azure's operation name (`InsertEntity`, `QueryEntities`, `Batch`, …).
    pub(crate) operation: &'static str,
    pub(crate) kind: OperationKind,
    /// The HTTP method as sent (`POST` for a tunnelled MERGE).
    pub(crate) method: String,
    /// The PartitionKey the request touches, when it touches exactly one.
    pub(crate) partition_key: Option<String>,
    /// Entities the request writes or reads by key (a change set counts each of its
    /// operations); 1 for everything else.
    pub(crate) entities: u32,
    /// What the request is priced by in request units (only described when they are on).
    pub(crate) priced: Priced,
}

/// What to do with a request before it is dispatched.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    /// Wait this long first (injected latency).
    pub(crate) delay: Option<Duration>,
    pub(crate) disposition: Disposition,
}

/// The course a request takes, as realism decides it.
#[derive(Debug, Default)]
pub(crate) enum Disposition {
    /// Handle the request normally.
    #[default]
    Proceed,
    /// Answer this error instead; nothing is applied.
    Reject(ApiError),
    /// Close the connection without an answer; nothing is applied.
    DropBeforeWrite,
    /// Handle the request (its writes applied and durable), then close the connection
    /// without an answer.
    DropAfterCommit,
}

/// The realism options, as the command line gives them.
#[derive(Debug, Clone, Default)]
pub struct RealismOptions {
    pub(crate) targets: Option<TargetRates>,
    /// Request units per second per table (`--simulate-targets` under `--flavor cosmos`, in
    /// place of `targets`).
    pub(crate) table_rus: Option<f64>,
    pub(crate) page_breaks: Option<PageBreaks>,
    /// How long a deleted table's name stays unusable (`--simulate-lifecycle`).
    pub(crate) lifecycle: Option<Duration>,
    /// How the flavour tells table names apart (for the deleted names above).
    pub(crate) name_case: NameCase,
    /// Fault rules loaded at start (`--faults FILE`).
    pub(crate) faults: Option<FaultSet>,
    /// Seed of the page-break RNG (fault files carry their own seed).
    pub(crate) seed: u64,
}

/// The realism state shared by every request.
pub(crate) struct Realism {
    targets: Option<targets::Targets>,
    request_units: Option<request_units::RequestUnits>,
    page_breaks: Option<paging::PageBreaker>,
    lifecycle: Option<lifecycle::DeletedNames>,
    faults: faults::FaultRules,
    /// Whether anything above is on (fault rules can be installed at run time).
    active: AtomicBool,
}

impl Realism {
    pub(crate) fn new(options: RealismOptions) -> Realism {
        let fixed = options.targets.is_some()
            || options.table_rus.is_some()
            || options.page_breaks.is_some()
            || options.lifecycle.is_some();
        let realism = Realism {
            targets: options.targets.map(targets::Targets::new),
            request_units: options.table_rus.map(request_units::RequestUnits::new),
            page_breaks: options
                .page_breaks
                .map(|mode| paging::PageBreaker::new(mode, options.seed)),
            lifecycle: options
                .lifecycle
                .map(|purge| lifecycle::DeletedNames::new(purge, options.name_case)),
            faults: faults::FaultRules::default(),
            active: AtomicBool::new(fixed),
        };
        if let Some(set) = options.faults {
            realism.replace_faults(Some(set));
        }
        realism
    }

    /// Everything off: the server's pipeline is exactly what it is without realism.
    #[cfg(test)]
    pub(crate) fn off() -> Realism {
        Realism::new(RealismOptions::default())
    }

    /// Whether any realism is on; when not, the server skips every hook.
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// Whether requests are priced in request units (worth describing [`RequestFacts::priced`]).
    pub(crate) fn prices_requests(&self) -> bool {
        self.request_units.is_some()
    }

    /// Before dispatch: fault rules first (they are explicit), then the deleted-name
    /// memory, then the scalability budgets or request units (charged only for requests
    /// that will run).
    pub(crate) fn before_dispatch(&self, facts: &RequestFacts) -> Verdict {
        let mut verdict = self.faults.decide(facts);
        if !matches!(
            verdict.disposition,
            Disposition::Proceed | Disposition::DropAfterCommit
        ) {
            return verdict;
        }
        if let Some(names) = &self.lifecycle {
            if let Err(e) = names.check(facts) {
                verdict.disposition = Disposition::Reject(e);
                return verdict;
            }
        }
        if let Some(targets) = &self.targets {
            if let Err(e) = targets.charge(facts) {
                verdict.disposition = Disposition::Reject(e);
            }
        }
        if let Some(units) = &self.request_units {
            let table = facts.table.as_deref();
            if let Err(e) = units.admit(&facts.account, table, facts.operation, &facts.priced) {
                verdict.disposition = Disposition::Reject(e);
            }
        }
        verdict
    }

    /// After the request ran: charges what it cost beyond its upfront price (a read's or a
    /// query's answer).
    pub(crate) fn after_run(&self, facts: &RequestFacts, served: &Served) {
        if let Some(units) = &self.request_units {
            units.settle(
                &facts.account,
                facts.table.as_deref(),
                &facts.priced,
                served,
            );
        }
    }

    /// After commit: remembers a deleted table's name (`succeeded`: the operation was
    /// answered with a success status).
    pub(crate) fn after_commit(&self, facts: &RequestFacts, succeeded: bool) {
        if let Some(names) = &self.lifecycle {
            if succeeded && facts.operation == "DeleteTable" {
                names.remember(facts);
            }
        }
    }

    /// Where a query page of rows with these partition keys should end early: `Some(n)`
    /// keeps the first `n` rows (0: an empty page) and continues at row `n`.
    pub(crate) fn page_cut(&self, partition_keys: &[&str]) -> Option<usize> {
        self.page_breaks.as_ref()?.cut(partition_keys)
    }

    /// Installs (or with `None` removes) the fault rules; counters and the RNG restart.
    pub(crate) fn replace_faults(&self, set: Option<FaultSet>) {
        self.faults.replace(set);
        let fixed = self.targets.is_some()
            || self.request_units.is_some()
            || self.page_breaks.is_some()
            || self.lifecycle.is_some();
        self.active
            .store(fixed || self.faults.is_installed(), Ordering::Relaxed);
    }

    /// The installed rules with their counters, as JSON (`GET /_tablestore/faults`).
    pub(crate) fn faults_report(&self) -> serde_json::Value {
        self.faults.report()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn facts(operation: &'static str, kind: OperationKind) -> RequestFacts {
        RequestFacts {
            account: "acct".into(),
            table: Some("people".into()),
            operation,
            kind,
            method: "POST".into(),
            partition_key: Some("p".into()),
            entities: 1,
            priced: Priced::Free,
        }
    }

    #[test]
    fn off_is_inactive_and_proceeds() {
        let r = Realism::off();
        assert!(!r.is_active());
        let v = r.before_dispatch(&facts("InsertEntity", OperationKind::Write));
        assert!(matches!(v.disposition, Disposition::Proceed));
        assert!(v.delay.is_none());
        assert_eq!(r.page_cut(&["a", "b"]), None);
    }

    #[test]
    fn installing_faults_activates_and_removing_deactivates() {
        let r = Realism::off();
        let set = FaultSet::parse_json(br#"{"rules":[{"action":"error","error":"ServerBusy"}]}"#)
            .unwrap();
        r.replace_faults(Some(set));
        assert!(r.is_active());
        let v = r.before_dispatch(&facts("InsertEntity", OperationKind::Write));
        match v.disposition {
            Disposition::Reject(e) => assert_eq!(e.code, crate::protocol::ErrorCode::ServerBusy),
            other => panic!("expected a rejection, got {other:?}"),
        }
        r.replace_faults(None);
        assert!(!r.is_active());
    }
}
