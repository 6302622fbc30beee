//! Fault injection: rules loaded from a file (`--faults FILE`, TOML or JSON) or replaced at
//! run time (`PUT /_tablestore/faults`). A rule matches requests by account, table,
//! operation (kind or Azure operation name) and method, fires with a probability or on its
//! Nth match, and then answers an Azure error, adds latency, or drops the connection before
//! the write is applied or after it is applied and durable. One seeded RNG serves every rule,
//! so a run with the same seed and the same request order fires the same faults.
//!
//! ```toml
//! seed = 42
//! [[rules]]
//! table = "orders"
//! operation = "write"          # read | write | batch | admin | an operation name | "*"
//! probability = 0.3            # or: nth = 3 (fires on the 3rd match only)
//! action = "error"             # error | latency | drop-before-write | drop-after-commit
//! error = "ServerBusy"         # any Azure code; status defaults to the code's own
//! ```

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rand::{RngExt as _, SeedableRng as _};
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};

use super::{Disposition, RequestFacts, Verdict};
use crate::protocol::{ApiError, ErrorCode};

/// What a firing rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum FaultAction {
    /// Answer `error` (with `status`, default the code's own).
    Error,
    /// Wait `latency_ms`, then handle the request normally.
    Latency,
    /// Close the connection without an answer; nothing is applied.
    DropBeforeWrite,
    /// Handle the request (its writes applied and durable), then close the connection
    /// without an answer: the outcome the client cannot know.
    DropAfterCommit,
}

/// One rule as written in a file or a PUT body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FaultRule {
    /// A label shown in reports and logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) account: Option<String>,
    /// Table name (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) table: Option<String>,
    /// `read`, `write`, `batch`, `admin`, an Azure operation name (`InsertEntity`), or `*`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) operation: Option<String>,
    /// HTTP method as sent (`GET`, `POST`, `PUT`, `MERGE`, `PATCH`, `DELETE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) method: Option<String>,
    /// Fire on each match with this probability (0..=1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) probability: Option<f64>,
    /// Fire on the Nth match only (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nth: Option<u64>,
    /// Fire at most this many times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) times: Option<u64>,
    pub(crate) action: FaultAction,
    /// Azure error code for `action = "error"` (`ServerBusy`, `InternalError`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// HTTP status for the error, when not the code's usual one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status: Option<u16>,
    /// Delay in milliseconds: the whole effect of `latency`, or a wait before any other
    /// action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) latency_ms: Option<u64>,
}

/// A validated set of rules with the seed of their RNG.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FaultSet {
    #[serde(default)]
    pub(crate) seed: u64,
    #[serde(default, alias = "rule")]
    pub(crate) rules: Vec<FaultRule>,
}

impl FaultSet {
    /// Parses a file: JSON if it starts with `{`, TOML otherwise.
    pub(crate) fn parse(text: &str) -> Result<FaultSet, String> {
        if text.trim_start().starts_with('{') {
            FaultSet::parse_json(text.as_bytes())
        } else {
            FaultSet::parse_toml(text)
        }
    }

    pub(crate) fn parse_json(bytes: &[u8]) -> Result<FaultSet, String> {
        let set: FaultSet = serde_json::from_slice(bytes)
            .map_err(|e| format!("invalid fault rules (JSON): {e}"))?;
        set.validated()
    }

    pub(crate) fn parse_toml(text: &str) -> Result<FaultSet, String> {
        let set: FaultSet = toml::from_str(text).map_err(|e| {
            // One line: where, then what (toml's Display draws the line with a caret).
            let at = e.span().map(|span| {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!(" at line {line}, column {column}")
            });
            format!(
                "invalid fault rules (TOML){}: {}",
                at.unwrap_or_default(),
                e.message().trim()
            )
        })?;
        set.validated()
    }

    fn validated(self) -> Result<FaultSet, String> {
        for (i, rule) in self.rules.iter().enumerate() {
            rule.validate()
                .map_err(|e| format!("fault rule {} ({}): {e}", i + 1, rule.label()))?;
        }
        Ok(self)
    }
}

impl FaultRule {
    fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{:?}", self.action).to_ascii_lowercase())
    }

    fn validate(&self) -> Result<(), String> {
        if let Some(p) = self.probability {
            if !(0.0..=1.0).contains(&p) {
                return Err(format!("probability must be between 0 and 1, not {p}"));
            }
        }
        if self.probability.is_some() && self.nth.is_some() {
            return Err("give either probability or nth, not both".into());
        }
        if self.nth == Some(0) {
            return Err("nth counts from 1".into());
        }
        if let Some(op) = &self.operation {
            if !is_known_operation(op) {
                return Err(format!(
                    "unknown operation \"{op}\"; use read, write, batch, admin, *, or an operation name such as InsertEntity"
                ));
            }
        }
        match self.action {
            FaultAction::Error => {
                let Some(code) = &self.error else {
                    return Err(
                        "action \"error\" needs an error code, e.g. error = \"ServerBusy\"".into(),
                    );
                };
                if ErrorCode::parse(code).is_none() {
                    return Err(format!(
                        "unknown error code \"{code}\"; use an Azure code such as ServerBusy, InternalError or OperationTimedOut"
                    ));
                }
                if let Some(s) = self.status {
                    if !(400..=599).contains(&s) {
                        return Err(format!(
                            "status must be an HTTP error status (400..599), not {s}"
                        ));
                    }
                }
            }
            FaultAction::Latency if self.latency_ms.is_none() => {
                return Err("action \"latency\" needs latency_ms".into());
            }
            _ => {}
        }
        if self.latency_ms.is_some_and(|ms| ms > 600_000) {
            return Err("latency_ms is at most 600000 (10 minutes)".into());
        }
        Ok(())
    }

    fn matches(&self, facts: &RequestFacts) -> bool {
        let eq = |want: &Option<String>, have: Option<&str>| {
            want.as_deref()
                .is_none_or(|w| have.is_some_and(|h| w.eq_ignore_ascii_case(h)))
        };
        eq(&self.account, Some(&facts.account))
            && eq(&self.table, facts.table.as_deref())
            && eq(&self.method, Some(&facts.method))
            && self.operation.as_deref().is_none_or(|op| {
                op == "*"
                    || op.eq_ignore_ascii_case(facts.kind.as_str())
                    || op.eq_ignore_ascii_case(facts.operation)
            })
    }

    fn error(&self) -> ApiError {
        let code = self
            .error
            .as_deref()
            .and_then(ErrorCode::parse)
            .unwrap_or(ErrorCode::InternalError);
        let error = match code {
            // Azure's wording for this code (Common REST API error codes).
            ErrorCode::OperationTimedOut => ApiError::with_message(
                code,
                "The operation could not be completed within the permitted time.",
            ),
            _ => ApiError::new(code),
        };
        match self.status.and_then(|s| http::StatusCode::from_u16(s).ok()) {
            Some(s) if s != code.status() => error.with_status(s),
            _ => error,
        }
    }
}

/// Operation names a rule may give.
const OPERATIONS: &[&str] = &[
    "read",
    "write",
    "batch",
    "admin",
    "*",
    "QueryTables",
    "GetTable",
    "CreateTable",
    "DeleteTable",
    "GetTableAcl",
    "SetTableAcl",
    "QueryEntities",
    "GetEntity",
    "InsertEntity",
    "UpdateEntity",
    "MergeEntity",
    "DeleteEntity",
    "InsertOrReplaceEntity",
    "InsertOrMergeEntity",
    "Batch",
    "GetServiceProperties",
    "SetServiceProperties",
    "GetServiceStats",
];

fn is_known_operation(op: &str) -> bool {
    OPERATIONS.iter().any(|o| o.eq_ignore_ascii_case(op))
}

/// Counters of one installed rule.
#[derive(Debug, Default, Clone, Copy)]
struct Hits {
    matched: u64,
    fired: u64,
}

struct Installed {
    set: FaultSet,
    hits: Vec<Hits>,
    rng: Pcg64,
}

/// The installed rules (none by default).
#[derive(Default)]
pub(crate) struct FaultRules {
    installed: Mutex<Option<Installed>>,
    any: AtomicBool,
}

impl FaultRules {
    pub(crate) fn is_installed(&self) -> bool {
        self.any.load(Ordering::Relaxed)
    }

    pub(crate) fn replace(&self, set: Option<FaultSet>) {
        let mut installed = self.installed.lock();
        *installed = set.filter(|s| !s.rules.is_empty()).map(|set| Installed {
            hits: vec![Hits::default(); set.rules.len()],
            rng: Pcg64::seed_from_u64(set.seed),
            set,
        });
        self.any.store(installed.is_some(), Ordering::Relaxed);
    }

    /// Every matching rule counts the request; in order, the first rule that fires decides
    /// (later rules do not roll).
    pub(crate) fn decide(&self, facts: &RequestFacts) -> Verdict {
        if !self.is_installed() {
            return Verdict::default();
        }
        let mut guard = self.installed.lock();
        let Some(installed) = guard.as_mut() else {
            return Verdict::default();
        };
        let mut decided: Option<Verdict> = None;
        for (i, rule) in installed.set.rules.iter().enumerate() {
            if !rule.matches(facts) {
                continue;
            }
            let hits = &mut installed.hits[i];
            hits.matched += 1;
            if decided.is_some() || rule.times.is_some_and(|t| hits.fired >= t) {
                continue;
            }
            let fires = match (rule.nth, rule.probability) {
                (Some(n), _) => hits.matched == n,
                (None, Some(p)) => installed.rng.random_bool(p),
                (None, None) => true,
            };
            if !fires {
                continue;
            }
            hits.fired += 1;
            tracing::info!(
                target: super::targets::LOG_TARGET,
                rule = %rule.label(), operation = facts.operation,
                table = facts.table.as_deref().unwrap_or("-"),
                "fault injected"
            );
            let delay = rule.latency_ms.map(Duration::from_millis);
            let disposition = match rule.action {
                FaultAction::Error => Disposition::Reject(rule.error()),
                FaultAction::Latency => Disposition::Proceed,
                FaultAction::DropBeforeWrite => Disposition::DropBeforeWrite,
                FaultAction::DropAfterCommit => Disposition::DropAfterCommit,
            };
            decided = Some(Verdict { delay, disposition });
        }
        decided.unwrap_or_default()
    }

    /// `{"seed": …, "rules": [{…rule, "matched": n, "fired": n}]}`.
    pub(crate) fn report(&self) -> serde_json::Value {
        let guard = self.installed.lock();
        let Some(installed) = guard.as_ref() else {
            return serde_json::json!({"seed": 0, "rules": []});
        };
        let rules: Vec<serde_json::Value> = installed
            .set
            .rules
            .iter()
            .zip(&installed.hits)
            .map(|(rule, hits)| {
                let mut v = serde_json::to_value(rule).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.insert("matched".into(), hits.matched.into());
                    o.insert("fired".into(), hits.fired.into());
                }
                v
            })
            .collect();
        serde_json::json!({"seed": installed.set.seed, "rules": rules})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::realism::{OperationKind, Priced};

    fn facts(operation: &'static str, kind: OperationKind, method: &str) -> RequestFacts {
        RequestFacts {
            account: "devstoreaccount1".into(),
            table: Some("Orders".into()),
            operation,
            kind,
            method: method.into(),
            partition_key: None,
            entities: 1,
            priced: Priced::Free,
        }
    }

    fn installed(text: &str) -> FaultRules {
        let rules = FaultRules::default();
        rules.replace(Some(FaultSet::parse(text).unwrap()));
        rules
    }

    #[test]
    fn toml_and_json_give_the_same_rules() {
        let toml = r#"
            seed = 7
            [[rules]]
            table = "orders"
            operation = "write"
            probability = 0.3
            action = "error"
            error = "ServerBusy"
        "#;
        let json = r#"{"seed":7,"rules":[{"table":"orders","operation":"write","probability":0.3,"action":"error","error":"ServerBusy"}]}"#;
        assert_eq!(
            FaultSet::parse(toml).unwrap(),
            FaultSet::parse(json).unwrap()
        );
    }

    #[test]
    fn bad_rules_are_explained() {
        let cases = [
            (r#"{"rules":[{"action":"error"}]}"#, "needs an error code"),
            (
                r#"{"rules":[{"action":"error","error":"Nope"}]}"#,
                "unknown error code \"Nope\"",
            ),
            (r#"{"rules":[{"action":"latency"}]}"#, "needs latency_ms"),
            (r#"{"rules":[{"action":"explode"}]}"#, "unknown variant"),
            (
                r#"{"rules":[{"action":"drop-before-write","probability":2}]}"#,
                "between 0 and 1",
            ),
            (
                r#"{"rules":[{"action":"drop-before-write","operation":"frob"}]}"#,
                "unknown operation",
            ),
            (
                r#"{"rules":[{"action":"drop-before-write","nth":0}]}"#,
                "counts from 1",
            ),
            (
                r#"{"rules":[{"action":"drop-before-write","colour":"red"}]}"#,
                "unknown field",
            ),
        ];
        for (text, expected) in cases {
            let e = FaultSet::parse(text).unwrap_err();
            assert!(e.contains(expected), "{text}: {e}");
        }
    }

    #[test]
    fn rules_match_kind_name_method_and_table() {
        let rules = installed(
            r#"{"rules":[{"table":"ORDERS","operation":"InsertEntity","method":"post","action":"error","error":"InternalError"}]}"#,
        );
        let hit = rules.decide(&facts("InsertEntity", OperationKind::Write, "POST"));
        assert!(
            matches!(hit.disposition, Disposition::Reject(ref e) if e.code == ErrorCode::InternalError)
        );
        let miss = rules.decide(&facts("GetEntity", OperationKind::Read, "GET"));
        assert!(matches!(miss.disposition, Disposition::Proceed));
        let report = rules.report();
        assert_eq!(report["rules"][0]["matched"], 1);
        assert_eq!(report["rules"][0]["fired"], 1);
    }

    #[test]
    fn nth_fires_once_on_the_nth_match() {
        let rules =
            installed(r#"{"rules":[{"operation":"write","nth":3,"action":"drop-after-commit"}]}"#);
        let outcomes: Vec<bool> = (0..6)
            .map(|_| {
                matches!(
                    rules
                        .decide(&facts("InsertEntity", OperationKind::Write, "POST"))
                        .disposition,
                    Disposition::DropAfterCommit
                )
            })
            .collect();
        assert_eq!(outcomes, [false, false, true, false, false, false]);
    }

    #[test]
    fn probability_is_seeded_and_near_its_rate() {
        let text = r#"{"seed":11,"rules":[{"probability":0.3,"action":"error","error":"ServerBusy","status":503}]}"#;
        let run = || {
            let rules = installed(text);
            (0..1000)
                .map(|_| {
                    matches!(
                        rules
                            .decide(&facts("GetEntity", OperationKind::Read, "GET"))
                            .disposition,
                        Disposition::Reject(_)
                    )
                })
                .collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run());
        let fired = a.iter().filter(|f| **f).count();
        assert!((220..380).contains(&fired), "{fired} of 1000 at p=0.3");
    }

    #[test]
    fn latency_and_times() {
        let rules = installed(r#"{"rules":[{"action":"latency","latency_ms":25,"times":1}]}"#);
        let first = rules.decide(&facts("GetEntity", OperationKind::Read, "GET"));
        assert_eq!(first.delay, Some(Duration::from_millis(25)));
        assert!(matches!(first.disposition, Disposition::Proceed));
        let second = rules.decide(&facts("GetEntity", OperationKind::Read, "GET"));
        assert_eq!(second.delay, None);
    }

    #[test]
    fn operation_timed_out_has_azures_status_and_words() {
        let rules = installed(r#"{"rules":[{"action":"error","error":"OperationTimedOut"}]}"#);
        match rules
            .decide(&facts("GetEntity", OperationKind::Read, "GET"))
            .disposition
        {
            Disposition::Reject(e) => {
                assert_eq!(e.status().as_u16(), 500);
                assert!(e.message.contains("permitted time"));
            }
            other => panic!("{other:?}"),
        }
    }
}
