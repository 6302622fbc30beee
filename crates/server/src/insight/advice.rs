//! Design advice: rules from the Azure design guide, each checked against observed traffic
//! and data, each naming the guide's page and section it comes from (docs/insight.md lists
//! them with their trigger and the design that avoids it).

use serde::Serialize;

use crate::model::limits::{MAX_CUSTOM_PROPERTIES, MAX_ENTITY_SIZE, MAX_REQUEST_BODY};
use crate::protocol::dialect::{Dialect, Throughput};

/// A query that reads at least this many entities is "large" for the scan rules.
pub(crate) const LARGE_SCAN: u64 = 1000;
/// Public scalability target of one partition, entities per second (1 KiB entities).
pub(crate) const PARTITION_TARGET_PER_SECOND: u64 = 2000;
/// Public scalability target of one storage account, transactions per second.
pub(crate) const ACCOUNT_TARGET_PER_SECOND: u64 = 20_000;
/// Consecutive whole seconds a rate rule's target must be passed in: a sustained load, not a
/// spike (the targets are "high-end targets", and one busy second is not throttling).
pub(crate) const SUSTAINED_SECONDS: u64 = 5;
/// Inserts a table must see before the prepend/append rule judges their spread.
pub(crate) const APPEND_MIN_INSERTS: u64 = 500;
/// Distinct seconds those inserts must arrive in: a stream of inserts over time, which is what
/// the anti-pattern describes, not one bulk load (an import in key order also fills one
/// partition after the other, but for a moment, not "at any given time").
pub(crate) const APPEND_MIN_SECONDS: u64 = 60;
/// Times the first or last partition must have moved on to a new PartitionKey: a sequence of
/// partitions taking all inserts in turn. A table of one or two partitions never qualifies.
pub(crate) const APPEND_MIN_EDGE_MOVES: u64 = 2;
/// Partition scans filtering on the same property before an index is suggested.
pub(crate) const PARTITION_SCAN_REPEATS: u64 = 5;
/// First pages cut by `$top` in key order a table must see before the portability rule
/// fires: an application's "latest N" read, not one paging test.
pub(crate) const PORTABILITY_REPEATS: u64 = 5;
/// Cosmos DB's default throughput of a new table, RU/s ("API for Table FAQ"): what the
/// request-unit advice measures a query's cost against.
pub(crate) const COSMOS_DEFAULT_TABLE_RUS: f64 = 400.0;

/// A query's price in request units, with the entities it returned taken as 1 KB each
/// (insight does not keep their size), and how many seconds of a table's default
/// throughput it takes.
pub(crate) fn query_request_units(examined: u64, returned: u64) -> (f64, f64) {
    let returned_bytes = usize::try_from(returned.saturating_mul(1024)).unwrap_or(usize::MAX);
    let ru = crate::protocol::request_units::query(examined, returned, returned_bytes);
    (ru, ru / COSMOS_DEFAULT_TABLE_RUS)
}

/// Fraction of a limit that counts as "near" it (90 %).
pub(crate) fn is_near(value: usize, limit: usize) -> bool {
    value * 10 >= limit * 9
}

/// Entity size that counts as near the 1 MiB limit.
pub(crate) fn is_large_entity(size: usize) -> bool {
    is_near(size, MAX_ENTITY_SIZE)
}

/// Property count that counts as near the 252-property limit.
pub(crate) fn is_wide_entity(properties: usize) -> bool {
    is_near(properties, MAX_CUSTOM_PROPERTIES)
}

/// A batch near the 4 MiB payload limit. The operation count is not judged: a change set of
/// 100 operations is within the limit and is what the guide recommends (batch writes to one
/// partition), and the count is the client's own choice, not something the data can push over.
pub(crate) fn is_large_batch(body_bytes: usize) -> bool {
    is_near(body_bytes, MAX_REQUEST_BODY)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Rule {
    TableScan,
    PartitionScanOnProperty,
    PrependAppend,
    HotPartition,
    AccountTarget,
    LargeEntity,
    WideEntity,
    LargeBatch,
    ExaminedFarMoreThanReturned,
    Portability,
    NoKeyOrder,
    RequestUnitCost,
}

/// What a rule says and where the guide says it.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct RuleInfo {
    pub(crate) rule: Rule,
    pub(crate) id: &'static str,
    /// The public Azure documentation page.
    pub(crate) guide_page: &'static str,
    /// The section of that page, by its heading.
    pub(crate) guide_section: &'static str,
    pub(crate) problem: &'static str,
    pub(crate) suggestion: &'static str,
}

impl Rule {
    pub(crate) const ALL: [Rule; 12] = [
        Rule::TableScan,
        Rule::PartitionScanOnProperty,
        Rule::PrependAppend,
        Rule::HotPartition,
        Rule::AccountTarget,
        Rule::LargeEntity,
        Rule::WideEntity,
        Rule::LargeBatch,
        Rule::ExaminedFarMoreThanReturned,
        Rule::Portability,
        Rule::NoKeyOrder,
        Rule::RequestUnitCost,
    ];

    /// Whether the rule judges traffic to the service the server answers as: Table storage's
    /// scalability targets and the portability warning where queries come in key order (under
    /// `storage`), the missing key order and request units under `cosmos`; the design
    /// patterns under both.
    pub(crate) fn applies_to(self, dialect: &Dialect) -> bool {
        let targets = dialect.throughput == Throughput::ScalabilityTargets;
        match self {
            Rule::HotPartition | Rule::AccountTarget => targets,
            Rule::Portability => dialect.key_order,
            Rule::NoKeyOrder => !dialect.key_order,
            Rule::RequestUnitCost => dialect.throughput == Throughput::RequestUnits,
            _ => true,
        }
    }

    pub(crate) fn info(self) -> RuleInfo {
        let (id, guide_page, guide_section, problem, suggestion) = match self {
            Rule::TableScan => (
                "table-scan",
                "Table design patterns",
                "Index entities pattern; Inter-partition secondary index pattern",
                "Queries without a PartitionKey read the whole table to return a few entities (a table scan, the least efficient query class in \"Design for querying\").",
                "Keep index entities or copies keyed by the property you search on (PartitionKey = that value) so the query becomes a point or range query.",
            ),
            Rule::PartitionScanOnProperty => (
                "partition-scan-on-property",
                "Table design patterns",
                "Intra-partition secondary index pattern",
                "Queries repeatedly scan a partition filtering on the same non-key property.",
                "Store a second copy of each entity in the same partition with a RowKey built from that property (e.g. 'email_…') and query it as a range; keep the copies consistent with an entity group transaction.",
            ),
            Rule::PrependAppend => (
                "prepend-append",
                "Table design patterns",
                "Prepend/append anti-pattern",
                "For a sustained stream of inserts, almost every insert went to the first or the last partition of the key space, and that edge kept moving on to new PartitionKeys (as with a PartitionKey that is the current time): at any moment one partition takes all writes.",
                "Spread inserts over partitions with a compound PartitionKey (e.g. department + employee id) and keep the time order in the RowKey.",
            ),
            Rule::HotPartition => (
                "hot-partition",
                "Scalability and performance targets for Table storage",
                "Target throughput for a single table partition (1 KiB entities): up to 2,000 entities per second",
                "One partition served more than 2,000 entities per second for 5 seconds in a row; past what a partition can handle Azure begins to answer 503 Server Busy or 500 Operation Timeout.",
                "Spread the load over more partitions (see \"Design scalable and performant tables\", Partitions, and the Prepend/append anti-pattern) and retry with exponential backoff.",
            ),
            Rule::AccountTarget => (
                "account-target",
                "Scalability and performance targets for Table storage",
                "Maximum request rate per storage account: 20,000 transactions per second (1 KiB entities)",
                "The account handled more than 20,000 transactions per second for 5 seconds in a row; past its target Azure begins to answer 503 Server Busy.",
                "Spread the application over several storage accounts, or batch writes to one partition into entity group transactions.",
            ),
            Rule::LargeEntity => (
                "large-entity",
                "Table design patterns",
                "Large entities pattern",
                "Entities come within 10% of the 1 MiB entity size limit.",
                "Store the large value in blob storage and keep its address in a property of the entity.",
            ),
            Rule::WideEntity => (
                "wide-entity",
                "Table design patterns",
                "Wide entities pattern",
                "Entities come within 10% of the 252 custom property limit.",
                "Split the logical entity into several physical entities in one partition (RowKeys '01', '02', …) and update them together in an entity group transaction.",
            ),
            Rule::LargeBatch => (
                "large-batch",
                "Design scalable and performant tables",
                "Entity Group Transactions",
                "Entity group transactions come within 10% of the 4 MiB payload limit, so slightly larger entities will be refused.",
                "Leave headroom: split the change set into smaller transactions where atomicity allows, or keep large values out of the entities (Large entities pattern).",
            ),
            Rule::ExaminedFarMoreThanReturned => (
                "examined-far-more-than-returned",
                "Design for querying",
                "How your choice of PartitionKey and RowKey impacts query performance",
                "Key-bounded queries still read at least 100 entities for each one they return: the filter does its work after the read.",
                "Move the selective part of the filter into the RowKey (Compound key pattern) or keep an index (Intra-partition secondary index pattern) so the key range itself selects the results.",
            ),
            Rule::Portability => (
                "portability",
                "Table design patterns",
                "Log tail pattern (\"suits Table storage but not Cosmos DB\"); Azure Cosmos DB for Table FAQ: query results aren't sorted in partition key/row key order",
                "Queries use $top to take the first entities of a query that is not pinned to one entity, so which entities come back depends on PartitionKey/RowKey order; Cosmos DB for Table would answer them differently, because it does not return results in key order.",
                "If the application may move to Cosmos DB for Table, read the whole result and sort it on the client, or key the entities so that the wanted ones are one point or range query.",
            ),
            Rule::NoKeyOrder => (
                "no-key-order",
                "Table design patterns",
                "Log tail pattern (\"suits Table storage but not Cosmos DB\"); Azure Cosmos DB for Table FAQ: query results aren't sorted in partition key/row key order",
                "Queries use $top to take the first entities of a query that is not pinned to one entity, but Cosmos DB for Table returns results in no key order: $top takes some N matches, not the first or the latest N, so the log tail pattern and any page assumed sorted give wrong answers.",
                "Read the whole result (follow every continuation) and sort it on the client, or key the entities so that the wanted ones are one point or range query (e.g. keep the latest N in one entity).",
            ),
            Rule::RequestUnitCost => (
                "request-unit-cost",
                "Optimize request cost in Azure Cosmos DB",
                "Reading data: point reads and queries (a query's charge grows with the items it loads and returns; point reads cost least)",
                "Table scans or cross-partition queries read at least 1,000 entities each; Cosmos DB for Table charges a query request units for what it reads and returns, so one such query takes a large share of the table's throughput (400 RU/s by default), and the requests after it are answered 429 TooManyRequests.",
                "Query one partition by its PartitionKey (and a RowKey range) instead: keep index entities keyed by the property you search on (Index entities pattern), or read entities by their keys (a point read costs 1 RU per KB).",
            ),
        };
        RuleInfo {
            rule: self,
            id,
            guide_page,
            guide_section,
            problem,
            suggestion,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_names_a_guide_section_and_a_unique_id() {
        let mut ids: Vec<&str> = Rule::ALL.iter().map(|r| r.info().id).collect();
        for r in Rule::ALL {
            let i = r.info();
            assert!(!i.guide_page.is_empty() && !i.guide_section.is_empty());
            assert!(!i.problem.is_empty() && !i.suggestion.is_empty());
        }
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), Rule::ALL.len());
    }

    #[test]
    fn the_rate_rules_state_the_thresholds_they_use() {
        let in_a_row = format!("for {SUSTAINED_SECONDS} seconds in a row");
        for (rule, target) in [
            (Rule::HotPartition, "2,000 entities per second"),
            (Rule::AccountTarget, "20,000 transactions per second"),
        ] {
            let problem = rule.info().problem;
            assert!(
                problem.contains(target) && problem.contains(&in_a_row),
                "{problem}"
            );
        }
        assert_eq!(PARTITION_TARGET_PER_SECOND, 2000);
        assert_eq!(ACCOUNT_TARGET_PER_SECOND, 20_000);
    }

    #[test]
    fn near_limit_thresholds() {
        // 100 operations are within the limit; only the payload is judged.
        assert!(!is_large_batch(100 * 400));
        assert!(is_large_batch(MAX_REQUEST_BODY * 9 / 10 + 1));
        assert!(!is_large_batch(MAX_REQUEST_BODY * 8 / 10));
        assert!(is_wide_entity(227) && !is_wide_entity(226));
        assert!(is_large_entity(MAX_ENTITY_SIZE) && !is_large_entity(MAX_ENTITY_SIZE / 2));
    }
}
