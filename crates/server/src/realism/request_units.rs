//! Request units (RU), Cosmos DB for Table's throughput currency: what `--simulate-targets`
//! enforces under `--flavor cosmos` in place of Table storage's scalability targets. Each
//! table has a budget of RU per second (`--cosmos-table-rus`, default 400, Cosmos's default
//! for a new table: "API for Table FAQ"); each entity operation is priced by the model in
//! [`crate::protocol::request_units`]; a request the budget cannot cover is answered 429
//! `TooManyRequests` in Cosmos's words and changes nothing. Table and service operations are
//! not charged: Cosmos meters them against a separate metadata budget, not the table's.
//!
//! Admission: a request's price known before it runs (its writes; the 1 RU minimum of a
//! read or query) must fit the table's bucket, and is taken from it; once the request ran,
//! what a read or query actually cost (by the bytes it returned and the entities it
//! examined) is taken too, and may leave the bucket in debt, which later requests wait out.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::Instant;

use super::bucket::Bucket;
use crate::protocol::request_units as charge;
use crate::protocol::{dialect, ApiError, ErrorCode};

/// Log target of the "over budget" lines (shared with the storage targets).
use super::targets::LOG_TARGET;

/// Cosmos's default throughput for a new table, RU/s ("API for Table FAQ").
pub(crate) const DEFAULT_TABLE_RUS: u32 = 400;

/// Most table buckets kept; beyond it, full (idle) ones are forgotten.
const MAX_TABLES: usize = 65_536;

/// How a write is priced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteKind {
    Insert,
    /// Update, Merge, Insert Or Replace, Insert Or Merge.
    Replace,
    Delete,
}

/// One entity write as priced before it runs: its kind, the bytes of its JSON as sent and
/// the properties it carries (keys included: Cosmos indexes them too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PricedWrite {
    pub(crate) kind: WriteKind,
    pub(crate) item_bytes: usize,
    pub(crate) indexed_properties: usize,
}

impl PricedWrite {
    pub(crate) fn charge(&self) -> f64 {
        match self.kind {
            WriteKind::Insert => charge::insert(self.item_bytes, self.indexed_properties),
            WriteKind::Replace => charge::replace(self.item_bytes, self.indexed_properties),
            WriteKind::Delete => charge::delete(),
        }
    }
}

/// What a request is priced by, as the server describes it before it runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) enum Priced {
    /// Not charged: table and service operations (Cosmos's metadata budget).
    #[default]
    Free,
    /// Get Entity: priced by the bytes it returns.
    PointRead,
    /// Query Entities: priced by what it examined and returned.
    Query,
    /// Entity writes, one or (a change set) several.
    Writes(Vec<PricedWrite>),
}

impl Priced {
    /// The price known before the request runs (taken at admission).
    pub(crate) fn upfront(&self) -> f64 {
        match self {
            Priced::Free => 0.0,
            Priced::PointRead | Priced::Query => charge::MINIMUM,
            Priced::Writes(writes) => writes.iter().map(PricedWrite::charge).sum(),
        }
    }

    /// The whole price once the request ran and was answered with `served`.
    pub(crate) fn actual(&self, served: &Served) -> f64 {
        match self {
            Priced::PointRead if served.succeeded => charge::point_read(served.body_bytes),
            Priced::Query if served.succeeded => {
                charge::query(served.examined, served.returned, served.body_bytes)
            }
            _ => self.upfront(),
        }
    }

    /// Cosmos's name for the operation in its diagnostics (`OperationType`).
    fn operation_type(&self, operation: &str) -> &'static str {
        match (self, operation) {
            (Priced::PointRead, _) => "Read",
            (Priced::Query, _) => "Query",
            (_, "InsertEntity") => "Create",
            (_, "DeleteEntity") => "Delete",
            (_, "InsertOrReplaceEntity" | "InsertOrMergeEntity") => "Upsert",
            (_, "Batch") => "Batch",
            _ => "Replace",
        }
    }
}

/// What an answered request did, for its final price.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Served {
    /// Answered with a success status.
    pub(crate) succeeded: bool,
    /// Bytes of the answer's body (the item, or the page of items, as returned).
    pub(crate) body_bytes: usize,
    /// Entities a query examined and returned.
    pub(crate) examined: u64,
    pub(crate) returned: u64,
}

/// The per-table budgets.
pub(crate) struct RequestUnits {
    /// RU per second per table.
    table_rus: f64,
    tables: Mutex<HashMap<(String, String), Bucket>>,
}

impl RequestUnits {
    pub(crate) fn new(table_rus: f64) -> RequestUnits {
        RequestUnits {
            table_rus,
            tables: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a request's upfront price from its table's budget, or refuses it with Cosmos's
    /// 429 (taking nothing). Requests without a table or a price pass.
    pub(crate) fn admit(
        &self,
        account: &str,
        table: Option<&str>,
        operation: &str,
        priced: &Priced,
    ) -> Result<(), ApiError> {
        self.admit_at(account, table, operation, priced, Instant::now())
    }

    fn admit_at(
        &self,
        account: &str,
        table: Option<&str>,
        operation: &str,
        priced: &Priced,
        now: Instant,
    ) -> Result<(), ApiError> {
        let (Some(table), false) = (table, *priced == Priced::Free) else {
            return Ok(());
        };
        let rate = self.table_rus;
        let upfront = priced.upfront();
        let mut tables = self.tables.lock();
        if tables.len() >= MAX_TABLES {
            tables.retain(|_, bucket| {
                bucket.refill(rate, now);
                bucket.tokens < rate
            });
        }
        let bucket = tables
            .entry((account.to_string(), table.to_string()))
            .or_insert_with(|| Bucket::new(rate, now));
        bucket.refill(rate, now);
        if !bucket.fits(upfront, rate) {
            if bucket.should_log(now) {
                tracing::warn!(
                    target: LOG_TARGET,
                    account, table, operation,
                    charge = upfront, available = bucket.tokens.max(0.0), rate,
                    "table over its {rate} RU/s: {operation} needs {upfront} RU, {:.2} left; \
                     answering 429 TooManyRequests",
                    bucket.tokens.max(0.0)
                );
            }
            return Err(too_many_requests(priced.operation_type(operation)));
        }
        bucket.tokens -= upfront;
        Ok(())
    }

    /// Takes what a request cost beyond its upfront price, once it ran.
    pub(crate) fn settle(
        &self,
        account: &str,
        table: Option<&str>,
        priced: &Priced,
        served: &Served,
    ) {
        let Some(table) = table else { return };
        let more = priced.actual(served) - priced.upfront();
        if more <= 0.0 {
            return;
        }
        let mut tables = self.tables.lock();
        if let Some(bucket) = tables.get_mut(&(account.to_string(), table.to_string())) {
            bucket.tokens -= more;
        }
    }
}

/// Cosmos's 429 as recorded (recording `test_batch_inserts`, the query after a 100-entity
/// batch): code `TooManyRequests`, the "Request rate is large" text in Cosmos's `Message:`
/// wrapper, and diagnostics with `SubStatusCode: 3200` that end with the gateway's `SDK:`
/// name. The throttled request is charged nothing here (Cosmos reported 0.38 RU), and no
/// retry-after header is sent (the recorded 429s carry none).
pub(crate) fn too_many_requests(operation_type: &str) -> ApiError {
    let text = format!(
        "Message: {{\"Errors\":[\"{} Learn more: http://aka.ms/cosmosdb-error-429\"]}}",
        ErrorCode::TooManyRequests.default_message()
    );
    ApiError::with_message(ErrorCode::TooManyRequests, text).with_diagnostics(format!(
        "RequestStats: \r\nStatusCode: 429, SubStatusCode: 3200, RequestCharge: 0, \
         ResourceType: Document, OperationType: {operation_type}\r\n, SDK: {}",
        dialect::COSMOS_GATEWAY_SDK
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn write(kind: WriteKind, bytes: usize, properties: usize) -> Priced {
        Priced::Writes(vec![PricedWrite {
            kind,
            item_bytes: bytes,
            indexed_properties: properties,
        }])
    }

    #[test]
    fn a_change_set_costs_its_writes_and_reads_are_settled_after() {
        let batch = Priced::Writes(vec![
            PricedWrite {
                kind: WriteKind::Insert,
                item_bytes: 200,
                indexed_properties: 3,
            },
            PricedWrite {
                kind: WriteKind::Delete,
                item_bytes: 0,
                indexed_properties: 0,
            },
        ]);
        assert!((batch.upfront() - 10.6).abs() < 1e-9, "{}", batch.upfront());
        assert_eq!(Priced::Query.upfront(), 1.0);
        let served = Served {
            succeeded: true,
            body_bytes: 10 * 1024,
            examined: 30,
            returned: 10,
        };
        assert_eq!(Priced::Query.actual(&served), 12.0);
        let failed = Served {
            succeeded: false,
            ..served
        };
        assert_eq!(Priced::PointRead.actual(&failed), 1.0);
    }

    #[test]
    fn a_table_gets_its_budget_and_a_refusal_takes_nothing() {
        let ru = RequestUnits::new(12.0);
        let now = Instant::now();
        let insert = write(WriteKind::Insert, 100, 2); // 5.4 RU
        let admit = |at| ru.admit_at("a", Some("t"), "InsertEntity", &insert, at);
        assert!(admit(now).is_ok());
        assert!(admit(now).is_ok());
        let e = admit(now).unwrap_err();
        assert_eq!(e.code, ErrorCode::TooManyRequests);
        assert_eq!(e.status().as_u16(), 429);
        // 1.2 RU left: a read's minimum still fits; the refused insert took nothing.
        assert!(ru
            .admit_at("a", Some("t"), "GetEntity", &Priced::PointRead, now)
            .is_ok());
        // Other tables have their own budget; table operations are free.
        assert!(ru
            .admit_at("a", Some("u"), "InsertEntity", &insert, now)
            .is_ok());
        assert!(ru
            .admit_at("a", Some("t"), "DeleteTable", &Priced::Free, now)
            .is_ok());
        // Half a second refills 6 RU: one more insert.
        let later = now + Duration::from_millis(500);
        assert!(admit(later).is_ok());
        assert!(admit(later).is_err());
    }

    #[test]
    fn a_costly_query_leaves_debt_that_later_requests_wait_out() {
        let ru = RequestUnits::new(10.0);
        let now = Instant::now();
        let query = |at| ru.admit_at("a", Some("t"), "QueryEntities", &Priced::Query, at);
        assert!(query(now).is_ok());
        let served = Served {
            succeeded: true,
            body_bytes: 20 * 1024,
            examined: 20,
            returned: 20,
        };
        ru.settle("a", Some("t"), &Priced::Query, &served); // 20 RU: 10 in debt
        assert!(query(now).is_err());
        assert!(
            query(now + Duration::from_millis(1050)).is_err(),
            "still in debt"
        );
        assert!(query(now + Duration::from_millis(2100)).is_ok());
    }

    #[test]
    fn the_refusal_is_cosmoss_429() {
        let e = too_many_requests("Create");
        assert!(e
            .message
            .starts_with("Message: {\"Errors\":[\"Request rate is large."));
        let diagnostics = e.diagnostics.as_deref().unwrap();
        assert!(diagnostics.contains("StatusCode: 429, SubStatusCode: 3200, RequestCharge: 0"));
        assert!(diagnostics.contains("OperationType: Create"));
        assert!(
            diagnostics.ends_with(
                "\r\n, SDK: documentdb-dotnet-sdk/2.14.0 Host/64-bit MicrosoftWindowsNT/6.2.9200.0"
            ),
            "{diagnostics}"
        );
    }
}
