//! From a `$filter` to the key ranges a query must read.
//!
//! The planner computes a *superset* of the rows that can match, as a union of cells
//! `PartitionKey ∈ I₁ ∧ RowKey ∈ I₂` (intervals in ordinal UTF-16 order), then turns the cells
//! into sorted, non-overlapping [`KeyRange`]s. Ranges only narrow what is read: the executor
//! still evaluates the whole filter on every entity it reads, so the plan can never change a
//! result, only its cost. That keeps the planner small and obviously safe:
//!
//! - `PartitionKey`/`RowKey` compared with a String literal give intervals (`ne` gives two).
//!   Compared with any other type they can never hold, so they give nothing (under `not`,
//!   everything).
//! - Other properties give "everything".
//! - `and` intersects, `or` unites; `not` is pushed down with De Morgan (exact, since filter
//!   logic is two-valued: a comparison on a missing property is simply false).
//! - If the cells would exceed [`MAX_CELLS`] the planner gives up on that subtree and reads
//!   everything it covers.
//!
//! A cell whose PartitionKey is a single value becomes one range inside that partition
//! (bounded by its RowKey interval); any other cell becomes the whole partitions of its
//! PartitionKey interval (RowKey bounds cannot narrow a range spanning partitions).

use std::cmp::Ordering;
use std::fmt;
use std::ops::Bound;

use crate::model::edm::compare_ordinal;
use crate::model::EdmValue;
use crate::protocol::filter::{CmpOp, Expr, PropertyName};
use crate::store::{KeyBound, KeyRange};

/// Cells kept before a subtree falls back to "everything" (15 comparisons bound the real
/// number far below this; the cap only guards pathological shapes).
pub(crate) const MAX_CELLS: usize = 256;

/// An interval of strings in ordinal (UTF-16) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Interval {
    pub(crate) lo: Bound<String>,
    pub(crate) hi: Bound<String>,
}

impl Interval {
    pub(crate) fn all() -> Interval {
        Interval {
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
        }
    }

    fn from_op(op: CmpOp, s: &str) -> Vec<Interval> {
        let inc = || Bound::Included(s.to_string());
        let exc = || Bound::Excluded(s.to_string());
        let iv = |lo, hi| Interval { lo, hi };
        match op {
            CmpOp::Eq => vec![iv(inc(), inc())],
            CmpOp::Ne => vec![iv(Bound::Unbounded, exc()), iv(exc(), Bound::Unbounded)],
            CmpOp::Gt => vec![iv(exc(), Bound::Unbounded)],
            CmpOp::Ge => vec![iv(inc(), Bound::Unbounded)],
            CmpOp::Lt => vec![iv(Bound::Unbounded, exc())],
            CmpOp::Le => vec![iv(Bound::Unbounded, inc())],
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match (&self.lo, &self.hi) {
            (Bound::Unbounded, _) | (_, Bound::Unbounded) => false,
            (Bound::Included(a), Bound::Included(b)) => compare_ordinal(a, b) == Ordering::Greater,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                compare_ordinal(a, b) != Ordering::Less
            }
        }
    }

    /// Whether `value` lies in the interval (ordinal order).
    pub(crate) fn contains(&self, value: &str) -> bool {
        let above = match &self.lo {
            Bound::Unbounded => true,
            Bound::Included(lo) => compare_ordinal(value, lo) != Ordering::Less,
            Bound::Excluded(lo) => compare_ordinal(value, lo) == Ordering::Greater,
        };
        let below = match &self.hi {
            Bound::Unbounded => true,
            Bound::Included(hi) => compare_ordinal(value, hi) != Ordering::Greater,
            Bound::Excluded(hi) => compare_ordinal(value, hi) == Ordering::Less,
        };
        above && below
    }

    /// The single value of a closed point interval.
    pub(crate) fn point(&self) -> Option<&str> {
        match (&self.lo, &self.hi) {
            (Bound::Included(a), Bound::Included(b)) if a == b => Some(a),
            _ => None,
        }
    }

    fn intersect(&self, other: &Interval) -> Interval {
        Interval {
            lo: tighter(&self.lo, &other.lo, Ordering::Greater),
            hi: tighter(&self.hi, &other.hi, Ordering::Less),
        }
    }
}

/// Of two bounds of the same side, the tighter one: the larger lower bound (`prefer` =
/// Greater) or the smaller upper bound (`prefer` = Less). At equal values an excluded bound is
/// tighter than an included one.
fn tighter(a: &Bound<String>, b: &Bound<String>, prefer: Ordering) -> Bound<String> {
    match (a, b) {
        (Bound::Unbounded, x) | (x, Bound::Unbounded) => x.clone(),
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match compare_ordinal(x, y) {
                Ordering::Equal => {
                    if matches!(a, Bound::Excluded(_)) {
                        a.clone()
                    } else {
                        b.clone()
                    }
                }
                o if o == prefer => a.clone(),
                _ => b.clone(),
            }
        }
    }
}

/// `first ∈ I₁ ∧ second ∈ I₂` — for entities, first = PartitionKey and second = RowKey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cell {
    pub(crate) first: Interval,
    pub(crate) second: Interval,
}

impl Cell {
    pub(crate) fn all() -> Cell {
        Cell {
            first: Interval::all(),
            second: Interval::all(),
        }
    }

    fn is_all(&self) -> bool {
        self.first == Interval::all() && self.second == Interval::all()
    }

    fn is_empty(&self) -> bool {
        self.first.is_empty() || self.second.is_empty()
    }
}

/// Which key dimension a property is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dim {
    First,
    Second,
}

/// A superset of the rows satisfying `expr` (or its negation), as a union of cells.
/// `dim` says which properties are key dimensions; those always exist and are Strings.
pub(crate) fn region(
    expr: &Expr,
    negate: bool,
    dim: &dyn Fn(&PropertyName) -> Option<Dim>,
) -> Vec<Cell> {
    match expr {
        Expr::Compare(c) => {
            let Some(d) = dim(&c.property) else {
                return vec![Cell::all()];
            };
            let EdmValue::String(s) = &c.value else {
                // A key never equals, nor orders against, a non-String literal.
                return if negate {
                    vec![Cell::all()]
                } else {
                    Vec::new()
                };
            };
            let op = if negate { c.op.negated() } else { c.op };
            Interval::from_op(op, s)
                .into_iter()
                .map(|iv| match d {
                    Dim::First => Cell {
                        first: iv,
                        second: Interval::all(),
                    },
                    Dim::Second => Cell {
                        first: Interval::all(),
                        second: iv,
                    },
                })
                .collect()
        }
        // `true` is every row, `false` none (and the reverse under `not`).
        Expr::Const(b) => {
            if *b != negate {
                vec![Cell::all()]
            } else {
                Vec::new()
            }
        }
        Expr::Not(e) => region(e, !negate, dim),
        Expr::And(a, b) | Expr::Or(a, b) => {
            let ra = region(a, negate, dim);
            let rb = region(b, negate, dim);
            // and ↦ intersect, or ↦ union; negation swaps them (De Morgan).
            if matches!(expr, Expr::And(..)) != negate {
                intersect(&ra, &rb)
            } else {
                union(ra, rb)
            }
        }
    }
}

fn intersect(a: &[Cell], b: &[Cell]) -> Vec<Cell> {
    let mut out = Vec::new();
    for x in a {
        for y in b {
            let cell = Cell {
                first: x.first.intersect(&y.first),
                second: x.second.intersect(&y.second),
            };
            if !cell.is_empty() && !out.contains(&cell) {
                out.push(cell);
                if out.len() > MAX_CELLS {
                    return vec![Cell::all()];
                }
            }
        }
    }
    out
}

fn union(mut a: Vec<Cell>, b: Vec<Cell>) -> Vec<Cell> {
    for cell in b {
        if !a.contains(&cell) {
            a.push(cell);
        }
    }
    if a.len() > MAX_CELLS || a.iter().any(Cell::is_all) {
        return vec![Cell::all()];
    }
    a
}

/// What a plan reads, for logs and the debug header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeKind {
    /// The whole table.
    Scan,
    /// One entity.
    Point,
    /// One whole partition.
    Partition,
    /// Part of one partition.
    PartitionRange,
    /// Whole partitions of a PartitionKey interval.
    PartitionSpan,
}

impl RangeKind {
    fn of(range: &KeyRange) -> RangeKind {
        use KeyBound::*;
        let pk_of = |b: &KeyBound| match b {
            Included(p, _) | Excluded(p, _) => Some(p.clone()),
            PartitionStart(p) | PartitionEnd(p) => Some(p.clone()),
            Unbounded => None,
        };
        match (&range.start, &range.end) {
            (Unbounded, Unbounded) => RangeKind::Scan,
            (Included(p, r), Included(q, s)) if p == q && r == s => RangeKind::Point,
            (PartitionStart(p), PartitionEnd(q)) if p == q => RangeKind::Partition,
            (
                PartitionStart(_) | PartitionEnd(_) | Unbounded,
                PartitionStart(_) | PartitionEnd(_) | Unbounded,
            ) => RangeKind::PartitionSpan,
            (s, e) if pk_of(s).is_some() && pk_of(s) == pk_of(e) => RangeKind::PartitionRange,
            _ => RangeKind::PartitionSpan,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            RangeKind::Scan => "scan",
            RangeKind::Point => "point",
            RangeKind::Partition => "partition",
            RangeKind::PartitionRange => "partition-range",
            RangeKind::PartitionSpan => "partition-span",
        }
    }
}

/// The ranges a query reads, sorted and non-overlapping as `execute_page` needs them. The
/// filter itself is always applied to every entity read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub ranges: Vec<KeyRange>,
    /// Whether a filter is evaluated on what the ranges yield.
    pub(crate) filtered: bool,
}

impl Plan {
    pub(crate) fn kinds(&self) -> Vec<RangeKind> {
        self.ranges.iter().map(RangeKind::of).collect()
    }
}

/// Short ASCII description: `scan`, `empty`, `point+filter`, `union(2):point,point+filter`.
impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kinds = self.kinds();
        match kinds.as_slice() {
            [] => f.write_str("empty")?,
            [one] => f.write_str(one.as_str())?,
            many => {
                write!(f, "union({}):", many.len())?;
                for (i, k) in many.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    f.write_str(k.as_str())?;
                }
            }
        }
        if self.filtered {
            f.write_str("+filter")?;
        }
        Ok(())
    }
}

fn entity_dim(p: &PropertyName) -> Option<Dim> {
    match p {
        PropertyName::PartitionKey => Some(Dim::First),
        PropertyName::RowKey => Some(Dim::Second),
        _ => None,
    }
}

/// Plans a Query Entities request.
pub fn plan_entities(filter: Option<&Expr>) -> Plan {
    let Some(expr) = filter else {
        return Plan {
            ranges: vec![KeyRange::all()],
            filtered: false,
        };
    };
    let cells = region(expr, false, &entity_dim);
    Plan {
        ranges: normalize(cells.iter().map(cell_range).collect()),
        filtered: true,
    }
}

/// The key range covering a cell.
fn cell_range(cell: &Cell) -> KeyRange {
    if let Some(pk) = cell.first.point() {
        let start = match &cell.second.lo {
            Bound::Unbounded => KeyBound::PartitionStart(pk.to_string()),
            Bound::Included(r) => KeyBound::Included(pk.to_string(), r.clone()),
            Bound::Excluded(r) => KeyBound::Excluded(pk.to_string(), r.clone()),
        };
        let end = match &cell.second.hi {
            Bound::Unbounded => KeyBound::PartitionEnd(pk.to_string()),
            Bound::Included(r) => KeyBound::Included(pk.to_string(), r.clone()),
            Bound::Excluded(r) => KeyBound::Excluded(pk.to_string(), r.clone()),
        };
        return KeyRange { start, end };
    }
    let start = match &cell.first.lo {
        Bound::Unbounded => KeyBound::Unbounded,
        Bound::Included(p) => KeyBound::PartitionStart(p.clone()),
        Bound::Excluded(p) => KeyBound::PartitionEnd(p.clone()),
    };
    let end = match &cell.first.hi {
        Bound::Unbounded => KeyBound::Unbounded,
        Bound::Included(p) => KeyBound::PartitionEnd(p.clone()),
        Bound::Excluded(p) => KeyBound::PartitionStart(p.clone()),
    };
    KeyRange { start, end }
}

/// A range with its byte bounds, for ordering and merging.
struct Placed {
    range: KeyRange,
    start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
}

/// Orders start bounds: by key, an included bound before an excluded one.
fn cmp_start(a: &Bound<Vec<u8>>, b: &Bound<Vec<u8>>) -> Ordering {
    let key = |x: &Bound<Vec<u8>>| match x {
        Bound::Unbounded => (None, 0),
        Bound::Included(k) => (Some(k.clone()), 0),
        Bound::Excluded(k) => (Some(k.clone()), 1),
    };
    key(a).cmp(&key(b))
}

/// Orders end bounds: by key, an excluded bound before an included one, unbounded last.
fn cmp_end(a: &Bound<Vec<u8>>, b: &Bound<Vec<u8>>) -> Ordering {
    match (a, b) {
        (Bound::Unbounded, Bound::Unbounded) => Ordering::Equal,
        (Bound::Unbounded, _) => Ordering::Greater,
        (_, Bound::Unbounded) => Ordering::Less,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            x.cmp(y).then_with(|| {
                let rank = |b: &Bound<Vec<u8>>| u8::from(matches!(b, Bound::Included(_)));
                rank(a).cmp(&rank(b))
            })
        }
    }
}

/// Whether a range starting at `start` overlaps or directly continues one ending at `end`.
fn joins(end: &Bound<Vec<u8>>, start: &Bound<Vec<u8>>) -> bool {
    match (end, start) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
        (Bound::Included(e) | Bound::Excluded(e), Bound::Included(s) | Bound::Excluded(s)) => {
            match s.cmp(e) {
                Ordering::Less => true,
                // Only two excluded bounds leave the key itself uncovered.
                Ordering::Equal => {
                    !(matches!(end, Bound::Excluded(_)) && matches!(start, Bound::Excluded(_)))
                }
                Ordering::Greater => false,
            }
        }
    }
}

fn is_empty_range(start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    match (start, end) {
        (_, Bound::Unbounded) | (Bound::Unbounded, _) => false,
        (Bound::Included(s), Bound::Included(e)) => s > e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => {
            s >= e
        }
    }
}

/// Sorts ranges by start and merges those that overlap or touch, dropping empty ones.
pub(crate) fn normalize(ranges: Vec<KeyRange>) -> Vec<KeyRange> {
    let mut placed: Vec<Placed> = ranges
        .into_iter()
        .map(|range| {
            let (start, end) = range.to_bytes(0);
            Placed { range, start, end }
        })
        .filter(|p| !is_empty_range(&p.start, &p.end))
        .collect();
    placed.sort_by(|a, b| cmp_start(&a.start, &b.start));
    let mut out: Vec<Placed> = Vec::with_capacity(placed.len());
    for p in placed {
        match out.last_mut() {
            Some(last) if joins(&last.end, &p.start) => {
                if cmp_end(&p.end, &last.end) == Ordering::Greater {
                    last.end = p.end;
                    last.range.end = p.range.end;
                }
            }
            _ => out.push(p),
        }
    }
    out.into_iter().map(|p| p.range).collect()
}

/// Query Tables: the names to look up (as the filter spells them) when every row the filter
/// can match has one of a few exact `TableName` values; `None` to scan all tables.
pub fn plan_table_names(filter: Option<&Expr>) -> Option<Vec<String>> {
    let expr = filter?;
    let dim = |p: &PropertyName| match p {
        PropertyName::Named(n) if n == "TableName" => Some(Dim::First),
        _ => None,
    };
    let cells = region(expr, false, &dim);
    let mut names: Vec<String> = cells
        .iter()
        .map(|c| c.first.point().map(str::to_string))
        .collect::<Option<_>>()?;
    names.sort();
    names.dedup();
    Some(names)
}

/// The `TableName` values a Query Tables filter can match, as intervals: a superset, as for
/// entities (other properties and non-String comparisons widen it to everything).
#[derive(Debug, Clone)]
pub(crate) struct TableNameRange(Vec<Interval>);

impl TableNameRange {
    pub(crate) fn of(filter: Option<&Expr>) -> TableNameRange {
        let Some(expr) = filter else {
            return TableNameRange(vec![Interval::all()]);
        };
        let dim = |p: &PropertyName| match p {
            PropertyName::Named(n) if n == "TableName" => Some(Dim::First),
            _ => None,
        };
        TableNameRange(
            region(expr, false, &dim)
                .into_iter()
                .map(|c| c.first)
                .collect(),
        )
    }

    /// Whether a table named `name` lies in the range.
    pub(crate) fn admits(&self, name: &str) -> bool {
        self.0.iter().any(|iv| iv.contains(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::filter::parse;

    #[test]
    fn a_table_name_range_admits_what_the_filter_can_match() {
        let range = |f: &str| TableNameRange::of(Some(&parse(f).unwrap()));
        let r = range("TableName ge 'zzza' and TableName lt 'zzzb'");
        assert!(r.admits("zzza") && r.admits("zzza3"));
        assert!(!r.admits("zzzb") && !r.admits("zzzb4") && !r.admits("zzz"));
        let or = range("TableName lt 'b' or TableName gt 'y'");
        assert!(or.admits("a1") && or.admits("zz") && !or.admits("m"));
        // A condition on no name narrows nothing.
        assert!(range("true").admits("any") && TableNameRange::of(None).admits("any"));
        assert!(!range("TableName eq 'x' and false").admits("x"));
    }
    use KeyBound::*;

    fn plan(filter: &str) -> Plan {
        plan_entities(Some(&parse(filter).unwrap()))
    }

    fn s(x: &str) -> String {
        x.to_string()
    }

    fn range(start: KeyBound, end: KeyBound) -> KeyRange {
        KeyRange { start, end }
    }

    #[test]
    fn no_filter_scans_everything_unfiltered() {
        let p = plan_entities(None);
        assert_eq!(p.ranges, vec![KeyRange::all()]);
        assert_eq!(p.to_string(), "scan");
    }

    #[test]
    fn point_lookup() {
        let p = plan("PartitionKey eq 'a' and RowKey eq '1'");
        assert_eq!(p.ranges, vec![KeyRange::point("a", "1")]);
        assert_eq!(p.to_string(), "point+filter");
        // Order and extra residual terms do not matter.
        let p = plan("Age gt 3 and (RowKey eq '1' and PartitionKey eq 'a')");
        assert_eq!(p.ranges, vec![KeyRange::point("a", "1")]);
        // Literal on the left.
        let p = plan("'a' eq PartitionKey and '1' eq RowKey");
        assert_eq!(p.ranges, vec![KeyRange::point("a", "1")]);
    }

    #[test]
    fn one_partition() {
        let p = plan("PartitionKey eq 'a'");
        assert_eq!(p.ranges, vec![KeyRange::partition("a")]);
        assert_eq!(p.to_string(), "partition+filter");
        let p = plan("PartitionKey eq 'a' and Age gt 30");
        assert_eq!(p.ranges, vec![KeyRange::partition("a")]);
    }

    #[test]
    fn one_partition_with_row_key_bounds() {
        let p = plan("PartitionKey eq 'a' and RowKey ge '10' and RowKey lt '20'");
        assert_eq!(
            p.ranges,
            vec![range(Included(s("a"), s("10")), Excluded(s("a"), s("20")))]
        );
        assert_eq!(p.to_string(), "partition-range+filter");
        let p = plan("PartitionKey eq 'a' and RowKey gt '5'");
        assert_eq!(
            p.ranges,
            vec![range(Excluded(s("a"), s("5")), PartitionEnd(s("a")))]
        );
        let p = plan("PartitionKey eq 'a' and RowKey le '5'");
        assert_eq!(
            p.ranges,
            vec![range(PartitionStart(s("a")), Included(s("a"), s("5")))]
        );
    }

    #[test]
    fn partition_key_ranges() {
        let p = plan("PartitionKey ge 'a' and PartitionKey lt 'b'");
        assert_eq!(
            p.ranges,
            vec![range(PartitionStart(s("a")), PartitionStart(s("b")))]
        );
        assert_eq!(p.to_string(), "partition-span+filter");
        let p = plan("PartitionKey gt 'a'");
        assert_eq!(p.ranges, vec![range(PartitionEnd(s("a")), Unbounded)]);
        let p = plan("PartitionKey le 'a'");
        assert_eq!(p.ranges, vec![range(Unbounded, PartitionEnd(s("a")))]);
        // RowKey bounds cannot narrow a span of partitions.
        let p = plan("PartitionKey ge 'a' and PartitionKey le 'c' and RowKey eq '1'");
        assert_eq!(
            p.ranges,
            vec![range(PartitionStart(s("a")), PartitionEnd(s("c")))]
        );
    }

    #[test]
    fn disjunction_of_keys_is_a_union() {
        let p = plan("PartitionKey eq 'a' and (RowKey eq '1' or RowKey eq '9')");
        assert_eq!(
            p.ranges,
            vec![KeyRange::point("a", "1"), KeyRange::point("a", "9")]
        );
        assert_eq!(p.to_string(), "union(2):point,point+filter");
        // Sorted by key whatever the filter order; duplicates merged.
        let p = plan(
            "(PartitionKey eq 'b' and RowKey eq '1') or (PartitionKey eq 'a' and RowKey eq '2') or (RowKey eq '1' and PartitionKey eq 'b')",
        );
        assert_eq!(
            p.ranges,
            vec![KeyRange::point("a", "2"), KeyRange::point("b", "1")]
        );
        let p = plan("PartitionKey eq 'x' or PartitionKey eq 'c'");
        assert_eq!(
            p.ranges,
            vec![KeyRange::partition("c"), KeyRange::partition("x")]
        );
    }

    #[test]
    fn overlapping_and_touching_ranges_merge() {
        // A point inside a partition that is read whole.
        let p = plan("PartitionKey eq 'a' or (PartitionKey eq 'a' and RowKey eq '1')");
        assert_eq!(p.ranges, vec![KeyRange::partition("a")]);
        // Overlapping PartitionKey intervals.
        let p = plan("(PartitionKey ge 'a' and PartitionKey le 'm') or (PartitionKey ge 'k' and PartitionKey lt 'z')");
        assert_eq!(
            p.ranges,
            vec![range(PartitionStart(s("a")), PartitionStart(s("z")))]
        );
        // Touching row ranges: [1,5) ∪ [5,9] → [1,9].
        let p = plan("PartitionKey eq 'a' and ((RowKey ge '1' and RowKey lt '5') or (RowKey ge '5' and RowKey le '9'))");
        assert_eq!(
            p.ranges,
            vec![range(Included(s("a"), s("1")), Included(s("a"), s("9")))]
        );
        // `ne` leaves a gap of exactly one key: two ranges.
        let p = plan("PartitionKey eq 'a' and RowKey ne '5'");
        assert_eq!(
            p.ranges,
            vec![
                range(PartitionStart(s("a")), Excluded(s("a"), s("5"))),
                range(Excluded(s("a"), s("5")), PartitionEnd(s("a"))),
            ]
        );
    }

    #[test]
    fn unsatisfiable_reads_nothing() {
        for f in [
            "PartitionKey eq 'a' and PartitionKey eq 'b'",
            "PartitionKey gt 'b' and PartitionKey lt 'a'",
            "PartitionKey gt 'a' and PartitionKey lt 'a'",
            "PartitionKey eq 'a' and RowKey gt '5' and RowKey lt '5'",
            "PartitionKey eq 5",
            "RowKey ne 5L",
            "PartitionKey eq 'a' and not PartitionKey eq 'a'",
        ] {
            let p = plan(f);
            assert!(p.ranges.is_empty(), "{f}: {:?}", p.ranges);
            assert_eq!(p.to_string(), "empty+filter");
        }
    }

    #[test]
    fn everything_else_scans() {
        for f in [
            "Age gt 30",
            "PartitionKey eq 'a' or Age gt 30",
            "not PartitionKey eq 5",
            "RowKey eq '1'",
            "Timestamp gt datetime'2020-01-01T00:00:00Z'",
        ] {
            let p = plan(f);
            assert_eq!(p.ranges, vec![KeyRange::all()], "{f}");
            assert_eq!(p.to_string(), "scan+filter");
        }
    }

    #[test]
    fn negation_is_pushed_down() {
        let p = plan("not (PartitionKey ne 'a')");
        assert_eq!(p.ranges, vec![KeyRange::partition("a")]);
        let p = plan("not (PartitionKey lt 'a' or PartitionKey gt 'c')");
        assert_eq!(
            p.ranges,
            vec![range(PartitionStart(s("a")), PartitionEnd(s("c")))]
        );
        let p = plan("PartitionKey ne 'm'");
        assert_eq!(
            p.ranges,
            vec![
                range(Unbounded, PartitionStart(s("m"))),
                range(PartitionEnd(s("m")), Unbounded)
            ]
        );
    }

    #[test]
    fn ordinal_order_of_interval_bounds() {
        // U+FF21 sorts after U+1F600 in UTF-16 order although its code point is lower, so this
        // interval is not empty.
        let p = plan("PartitionKey gt '\u{1F600}' and PartitionKey lt '\u{FF21}'");
        assert_eq!(p.ranges.len(), 1);
        let p = plan("PartitionKey gt '\u{FF21}' and PartitionKey lt '\u{1F600}'");
        assert!(p.ranges.is_empty());
    }

    #[test]
    fn table_name_points() {
        let names = |f: &str| plan_table_names(Some(&parse(f).unwrap()));
        assert_eq!(names("TableName eq 'MyTable'"), Some(vec![s("MyTable")]));
        assert_eq!(
            names("TableName eq 'b' or TableName eq 'A' or TableName eq 'a'"),
            Some(vec![s("A"), s("a"), s("b")])
        );
        assert_eq!(names("TableName ge 'a'"), None);
        assert_eq!(names("TableName eq 5"), Some(vec![]));
        assert_eq!(plan_table_names(None), None);
    }
}
