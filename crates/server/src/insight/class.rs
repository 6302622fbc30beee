//! Query classes in the words of the Azure design guide ("Design for querying"): what a
//! query reads, decided from the planner's key ranges alone, so the class is the same on
//! every page and does not depend on the data.

use std::fmt;

use crate::protocol::filter::{Expr, PropertyName};
use crate::query::plan::{Plan, RangeKind};
use crate::store::KeyBound;

/// How a query reaches its entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum QueryClass {
    /// PartitionKey and RowKey both pinned to one value: one entity.
    Point,
    /// One PartitionKey, a RowKey range (other properties may filter inside it).
    Range,
    /// One PartitionKey, every entity of the partition read (a non-key filter, or none).
    PartitionScan,
    /// No single PartitionKey: every partition (or a span of whole partitions) is read.
    TableScan,
    /// This server's answer to an `or` of keys: several disjoint point or range reads. The
    /// guide warns that Azure serves such a filter as a table scan.
    UnionOfKeyRanges,
    /// Contradictory key terms (`PartitionKey eq 'a' and PartitionKey eq 'b'`): nothing is read.
    Empty,
}

impl QueryClass {
    pub(crate) const ALL: [QueryClass; 6] = [
        QueryClass::Point,
        QueryClass::Range,
        QueryClass::PartitionScan,
        QueryClass::TableScan,
        QueryClass::UnionOfKeyRanges,
        QueryClass::Empty,
    ];

    /// The guide's phrase, as shown in headers, logs, JSON and metrics labels.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            QueryClass::Point => "point query",
            QueryClass::Range => "range query",
            QueryClass::PartitionScan => "partition scan",
            QueryClass::TableScan => "table scan",
            QueryClass::UnionOfKeyRanges => "union of key ranges",
            QueryClass::Empty => "empty",
        }
    }

    /// The same phrase as a metrics label value (`point_query`, `table_scan`, …).
    pub(crate) fn label(self) -> &'static str {
        match self {
            QueryClass::Point => "point_query",
            QueryClass::Range => "range_query",
            QueryClass::PartitionScan => "partition_scan",
            QueryClass::TableScan => "table_scan",
            QueryClass::UnionOfKeyRanges => "union_of_key_ranges",
            QueryClass::Empty => "empty",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Classifies an entity query from its plan.
    pub(crate) fn of_plan(plan: &Plan) -> QueryClass {
        let kinds = plan.kinds();
        match kinds.as_slice() {
            [] => QueryClass::Empty,
            [one] => match one {
                RangeKind::Point => QueryClass::Point,
                RangeKind::PartitionRange => QueryClass::Range,
                RangeKind::Partition => QueryClass::PartitionScan,
                RangeKind::Scan | RangeKind::PartitionSpan => QueryClass::TableScan,
            },
            many if many.iter().any(|k| matches!(k, RangeKind::Scan)) => QueryClass::TableScan,
            _ => QueryClass::UnionOfKeyRanges,
        }
    }

    /// Classifies a Query Tables plan description (`scan`, `names(N)`, each maybe `+filter`):
    /// exact table names are point lookups in the account's table list, anything else scans it.
    pub(crate) fn of_table_plan(plan: &str) -> QueryClass {
        let base = plan.strip_suffix("+filter").unwrap_or(plan);
        match base {
            "names(0)" => QueryClass::Empty,
            "names(1)" => QueryClass::Point,
            b if b.starts_with("names(") => QueryClass::UnionOfKeyRanges,
            _ => QueryClass::TableScan,
        }
    }
}

impl fmt::Display for QueryClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The PartitionKey every range of `plan` stays inside, if there is one.
pub(crate) fn single_partition(plan: &Plan) -> Option<String> {
    let pk = |b: &KeyBound| match b {
        KeyBound::Included(p, _)
        | KeyBound::Excluded(p, _)
        | KeyBound::PartitionStart(p)
        | KeyBound::PartitionEnd(p) => Some(p.clone()),
        KeyBound::Unbounded => None,
    };
    let mut found: Option<String> = None;
    for r in &plan.ranges {
        let (a, b) = (pk(&r.start)?, pk(&r.end)?);
        if a != b || found.as_ref().is_some_and(|f| *f != a) {
            return None;
        }
        found = Some(a);
    }
    found
}

/// Whether a query page took "the first N" of its matches with `$top`: its first page (no
/// continuation given), cut by `$top` (below the 1,000-entity page limit, and full) with a
/// continuation, of a query that is not pinned to one entity. Which N entities came back then
/// depends on the order the service answers in: PartitionKey/RowKey order in Table storage,
/// none in Cosmos DB for Table. Later pages, and pages the 1,000 limit cut, are not counted: a
/// client that follows continuations to the end gets the same entities in either service.
pub(crate) fn top_first_n(
    class: QueryClass,
    first_page: bool,
    top: usize,
    returned: usize,
    has_next: bool,
) -> bool {
    !matches!(class, QueryClass::Point | QueryClass::Empty)
        && first_page
        && top < crate::model::limits::MAX_PAGE_SIZE
        && returned == top
        && has_next
}

/// Names of the properties a filter compares, keys included (sorted, without duplicates):
/// what an index entity or an intra-partition secondary index would have to serve, and what
/// the advice says a scan filtered on.
pub(crate) fn filtered_properties(filter: Option<&Expr>) -> Vec<String> {
    fn walk(e: &Expr, out: &mut Vec<String>) {
        match e {
            Expr::Compare(c) => out.push(match &c.property {
                PropertyName::Named(n) => n.clone(),
                PropertyName::PartitionKey => "PartitionKey".to_string(),
                PropertyName::RowKey => "RowKey".to_string(),
                PropertyName::Timestamp => "Timestamp".to_string(),
            }),
            Expr::Const(_) => {}
            Expr::Not(inner) => walk(inner, out),
            Expr::And(a, b) | Expr::Or(a, b) => {
                walk(a, out);
                walk(b, out);
            }
        }
    }
    let mut out = Vec::new();
    if let Some(e) = filter {
        walk(e, &mut out);
    }
    out.sort();
    out.dedup();
    out.truncate(8);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::filter;
    use crate::query::plan::plan_entities;

    fn class(f: &str) -> QueryClass {
        let expr = if f.is_empty() {
            None
        } else {
            Some(filter::parse(f).expect("filter parses"))
        };
        QueryClass::of_plan(&plan_entities(expr.as_ref()))
    }

    #[test]
    fn the_guides_query_shapes() {
        use QueryClass::*;
        let cases = [
            ("PartitionKey eq 'Sales' and RowKey eq '2'", Point),
            (
                "PartitionKey eq 'Sales' and RowKey ge 'S' and RowKey lt 'T'",
                Range,
            ),
            (
                "PartitionKey eq 'Sales' and LastName eq 'Smith'",
                PartitionScan,
            ),
            ("PartitionKey eq 'Sales'", PartitionScan),
            ("LastName eq 'Jones'", TableScan),
            ("", TableScan),
            ("PartitionKey ge 'A' and PartitionKey lt 'C'", TableScan),
            (
                "PartitionKey eq 'Sales' and (RowKey eq '1' or RowKey eq '2')",
                UnionOfKeyRanges,
            ),
            ("RowKey eq '1' or LastName eq 'x'", TableScan),
            ("PartitionKey eq 'a' and PartitionKey eq 'b'", Empty),
        ];
        for (f, want) in cases {
            assert_eq!(class(f), want, "{f}");
        }
    }

    #[test]
    fn the_partition_a_query_stays_in() {
        let one = |f: &str| {
            let e = filter::parse(f).expect("parses");
            single_partition(&plan_entities(Some(&e)))
        };
        assert_eq!(
            one("PartitionKey eq 'a' and RowKey gt '1'").as_deref(),
            Some("a")
        );
        assert_eq!(
            one("PartitionKey eq 'a' and (RowKey eq '1' or RowKey eq '3')").as_deref(),
            Some("a")
        );
        assert_eq!(one("PartitionKey eq 'a' or PartitionKey eq 'b'"), None);
        assert_eq!(one("Age gt 3"), None);
    }

    #[test]
    fn top_first_n_needs_a_first_page_cut_by_top() {
        use QueryClass::*;
        // `$top=5` on a partition scan, cut with a continuation: the first 5 in key order.
        assert!(top_first_n(PartitionScan, true, 5, 5, true));
        assert!(top_first_n(TableScan, true, 1, 1, true));
        // A full-key point query is one entity in either service.
        assert!(!top_first_n(Point, true, 1, 1, true));
        // No `$top`: the 1,000-entity page limit cut it, and the client follows.
        assert!(!top_first_n(TableScan, true, 1000, 1000, true));
        // All matches fit: the same set in any order.
        assert!(!top_first_n(PartitionScan, true, 5, 3, false));
        // A later page of a listing the client is following.
        assert!(!top_first_n(PartitionScan, false, 5, 5, true));
        // A page another cut (not `$top`) ended early.
        assert!(!top_first_n(Range, true, 5, 2, true));
    }

    #[test]
    fn table_queries() {
        assert_eq!(QueryClass::of_table_plan("scan"), QueryClass::TableScan);
        assert_eq!(
            QueryClass::of_table_plan("names(1)+filter"),
            QueryClass::Point
        );
        assert_eq!(
            QueryClass::of_table_plan("names(3)+filter"),
            QueryClass::UnionOfKeyRanges
        );
    }

    #[test]
    fn filtered_property_names() {
        let e =
            filter::parse("PartitionKey eq 'a' and (Age gt 3 or not (Name eq 'x' and Age lt 9))")
                .expect("parses");
        assert_eq!(
            filtered_properties(Some(&e)),
            vec!["Age", "Name", "PartitionKey"]
        );
        let by_row = filter::parse("RowKey eq '0005'").expect("parses");
        assert_eq!(filtered_properties(Some(&by_row)), vec!["RowKey"]);
        assert!(filtered_properties(None).is_empty());
    }
}
